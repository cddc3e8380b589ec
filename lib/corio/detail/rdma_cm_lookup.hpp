#pragma once

#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

namespace corio {
enum class address_format;
} // namespace corio

namespace corio::detail {

/// Looks `host` and `service` up with librdmacm's rdma_getaddrinfo, blocking
/// the calling thread, with the hints riostream and rstream give it: the
/// TCP port space; for `ip` and `ipv6` a numeric host of that family; for
/// `gid` a numeric host turned into family AF_IB (RAI_FAMILY); RAI_PASSIVE for a server. An empty
/// host is the loopback address, or the wildcard when `passive`.
///
/// Returns the IP endpoints rdma_getaddrinfo gives (the destination, or
/// the source address when passive), in its order. Errors: getaddrinfo's,
/// translated as boost::asio::ip::tcp::resolver translates them
/// (host_not_found, service_not_found, ...); errno when librdmacm fails
/// before the lookup (ENODEV without an RDMA device, which matches
/// corio::condition::no_rdma_device); corio::error::ib_address_unsupported
/// when every answer is an AF_IB address.
std::vector<boost::asio::ip::tcp::endpoint> rdma_cm_lookup(const std::string& host,
                                                           const std::string& service,
                                                           address_format format, bool passive,
                                                           boost::system::error_code& ec);

} // namespace corio::detail
