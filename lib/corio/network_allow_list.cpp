#include <corio/network_allow_list.hpp>

#include <algorithm>
#include <charconv>
#include <string>

#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>

namespace corio {

namespace {

/// The address as 16 bytes, IPv4 in the first 4; IPv4-mapped IPv6 addresses
/// as their IPv4 address.
std::array<unsigned char, 16> bytes_of(const boost::asio::ip::address& a, bool& v6) {
    std::array<unsigned char, 16> out{};
    if (a.is_v6() && a.to_v6().is_v4_mapped()) {
        const auto v4 = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, a.to_v6());
        const auto b = v4.to_bytes();
        std::copy(b.begin(), b.end(), out.begin());
        v6 = false;
    } else if (a.is_v4()) {
        const auto b = a.to_v4().to_bytes();
        std::copy(b.begin(), b.end(), out.begin());
        v6 = false;
    } else {
        out = a.to_v6().to_bytes();
        v6 = true;
    }
    return out;
}

/// True when the first `prefix` bits of `a` and `b` are equal.
bool same_prefix(const std::array<unsigned char, 16>& a, const std::array<unsigned char, 16>& b,
                 unsigned prefix) noexcept {
    const unsigned whole = prefix / 8;
    if (!std::equal(a.begin(), a.begin() + whole, b.begin()))
        return false;
    const unsigned rest = prefix % 8;
    if (rest == 0)
        return true;
    const auto mask = static_cast<unsigned char>(0xff << (8 - rest));
    return (a[whole] & mask) == (b[whole] & mask);
}

} // namespace

void network_allow_list::add(std::string_view cidr) {
    boost::system::error_code ec;
    add(cidr, ec);
    if (ec)
        throw boost::system::system_error(ec, "not a network (address[/prefix]): '" +
                                                  std::string(cidr) + "'");
}

void network_allow_list::add(std::string_view cidr, boost::system::error_code& ec) {
    const auto slash = cidr.find('/');
    const std::string address_text(cidr.substr(0, slash));
    const auto address = boost::asio::ip::make_address(address_text, ec);
    if (ec) {
        ec = boost::asio::error::invalid_argument;
        return;
    }
    network n{};
    n.bytes = bytes_of(address, n.v6);
    const unsigned width = n.v6 ? 128 : 32;
    // A mapped address given with a prefix counts its bits as IPv6 does.
    const unsigned mapped_bits = !n.v6 && address.is_v6() ? 96 : 0;
    n.prefix = width;
    if (slash != std::string_view::npos) {
        const auto digits = cidr.substr(slash + 1);
        unsigned prefix = 0;
        const auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), prefix);
        if (digits.empty() || err != std::errc() || end != digits.data() + digits.size() ||
            prefix > width + mapped_bits || prefix < mapped_bits) {
            ec = boost::asio::error::invalid_argument;
            return;
        }
        n.prefix = prefix - mapped_bits;
    }
    // Host bits are cleared so that contains compares prefixes only.
    const unsigned whole = n.prefix / 8;
    if (n.prefix % 8 != 0)
        n.bytes[whole] &= static_cast<unsigned char>(0xff << (8 - n.prefix % 8));
    for (unsigned i = whole + (n.prefix % 8 != 0 ? 1 : 0); i < 16; ++i)
        n.bytes[i] = 0;
    networks_.push_back(n);
    ec.clear();
}

bool network_allow_list::contains(const boost::asio::ip::address& address) const noexcept {
    bool v6 = false;
    const auto bytes = bytes_of(address, v6);
    return std::any_of(networks_.begin(), networks_.end(), [&](const network& n) {
        return n.v6 == v6 && same_prefix(n.bytes, bytes, n.prefix);
    });
}

} // namespace corio
