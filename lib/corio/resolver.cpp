#include "corio/resolver.hpp"

namespace corio::detail {

namespace {

using boost::asio::ip::resolver_base;
using boost::asio::ip::tcp;

} // namespace

resolve_hints hints_for(address_format format, bool passive, boost::system::error_code& ec) {
    ec.clear();
    // No AI_ADDRCONFIG (Asio's default): it ignores loopback addresses, so on
    // a host whose only interface is lo, "localhost" and "::1" would fail.
    resolve_hints hints;
    hints.flags = passive ? resolver_base::passive : resolver_base::flags{};
    switch (format) {
    case address_format::name:
        break;
    case address_format::ip:
        hints.protocol = tcp::v4();
        hints.flags |= resolver_base::numeric_host;
        break;
    case address_format::ipv6:
        hints.protocol = tcp::v6();
        hints.flags |= resolver_base::numeric_host;
        break;
    case address_format::gid:
        // getaddrinfo cannot read a GID: resolve_method::rdma_getaddrinfo can.
        ec = boost::asio::error::operation_not_supported;
        break;
    default:
        ec = boost::asio::error::invalid_argument;
        break;
    }
    return hints;
}

std::vector<tcp::endpoint>
endpoints_of(const boost::asio::ip::basic_resolver_results<tcp>& results) {
    std::vector<tcp::endpoint> endpoints;
    endpoints.reserve(results.size());
    for (const auto& entry : results)
        endpoints.push_back(entry.endpoint());
    return endpoints;
}

} // namespace corio::detail
