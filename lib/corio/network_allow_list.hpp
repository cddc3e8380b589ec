#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

namespace corio {

/// A set of IPv4 and IPv6 networks, written as CIDR ("10.0.0.0/8",
/// "fd00::/8", or a bare address for one host), usable as an acceptor's
/// accept filter: basic_acceptor::set_accept_filter(list) admits a peer
/// whose address lies in one of the networks.
///
/// An IPv4 peer that reaches an IPv6 listener appears as an IPv4-mapped
/// address (\::ffff:a.b.c.d); it matches the IPv4 networks as a.b.c.d, so a
/// list need not spell each network twice. Host bits below the prefix are
/// ignored ("192.168.1.7/24" is 192.168.1.0/24), as `ip route` reads them.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: const members are safe; add is
/// unsafe while another thread reads the list.
class network_allow_list {
public:
    /// An empty list, which admits no peer.
    network_allow_list() = default;

    /// Adds the network `cidr`. Throws boost::system::system_error
    /// (boost::asio::error::invalid_argument) naming `cidr` when it is not an
    /// address with an optional /prefix within the address's width.
    void add(std::string_view cidr);
    /// As the overload above, but reports a bad `cidr` in `ec` and leaves the
    /// list unchanged.
    void add(std::string_view cidr, boost::system::error_code& ec);

    /// True when `address` lies in one of the networks.
    bool contains(const boost::asio::ip::address& address) const noexcept;
    /// The accept filter: true when the peer's address lies in one of the networks.
    bool operator()(const boost::asio::ip::tcp::endpoint& peer) const noexcept {
        return contains(peer.address());
    }

    /// How many networks the list holds.
    std::size_t size() const noexcept { return networks_.size(); }
    /// True when the list holds no network (and so admits nobody).
    bool empty() const noexcept { return networks_.empty(); }

private:
    /// An address of either family as 16 bytes (IPv4 in the first 4) and the
    /// prefix length in bits, host bits cleared.
    struct network {
        bool v6;
        std::array<unsigned char, 16> bytes;
        unsigned prefix;
    };

    std::vector<network> networks_;
};

} // namespace corio
