#pragma once

#include <cstddef>

#include <sys/socket.h>
#include <sys/uio.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/system/error_code.hpp>

#include <corio/detail/rpoll_operation.hpp>
#include <corio/detail/socket_control.hpp>
#include <corio/transport.hpp>

namespace corio {
class rpoll_service;
}

namespace corio::detail {

class socket_impl;

// The non-template work behind corio::basic_datagram_socket, and the
// protocol-chosen open of corio::basic_socket.

/// basic_socket::open for streams.
inline boost::system::error_code open_for(rpoll_service& service, socket_impl& impl, transport t,
                                          const boost::asio::ip::tcp& protocol) {
    return open_socket(service, impl, t, protocol.family());
}

/// basic_socket::open for datagram sockets: a nonblocking SOCK_DGRAM socket
/// of resolve_datagram_transport(t).
boost::system::error_code open_for(rpoll_service& service, socket_impl& impl, transport t,
                                   const boost::asio::ip::udp& protocol);

/// Connects a datagram socket (it only records the peer, so it never waits),
/// opening one of the endpoint's family and `t` first if `impl` has none.
boost::system::error_code connect_datagram(rpoll_service& service, socket_impl& impl,
                                           transport t, const boost::asio::ip::udp::endpoint& peer);

/// Refuses a datagram before any call is made: bad_descriptor on a closed
/// socket, message_size when `size` bytes exceed what the socket's
/// transport carries for `family`, not_connected for a send without a
/// destination (`has_destination` false) on an unconnected socket.
boost::system::error_code check_datagram_send(socket_impl& impl, std::size_t size, int family,
                                              bool has_destination);

/// One nonblocking sendto (kind write) or recvfrom (kind read) of one
/// datagram; `peer` is the destination (null: the connected peer) or
/// receives the source (may be null). Call with the I/O mutex held.
std::size_t datagram_call(socket_impl& impl, wait_kind kind, const iovec* iov, int count,
                          boost::asio::ip::udp::endpoint* peer, boost::system::error_code& ec);

/// A blocking send or receive: the nonblocking call, then rpoll on this
/// socket until it can go on (a close() from another thread ends it with
/// operation_aborted). With non_blocking(true), the one call only
/// (would_block when it would wait).
std::size_t blocking_datagram(rpoll_service& service, socket_impl& impl, wait_kind kind, const iovec* iov, int count,
                              boost::asio::ip::udp::endpoint* peer, boost::system::error_code& ec);

/// Whether a datagram call's error means "not now": wait and try again.
inline bool datagram_would_block(const boost::system::error_code& ec) noexcept {
    return ec == boost::asio::error::would_block || ec == boost::asio::error::try_again;
}

} // namespace corio::detail
