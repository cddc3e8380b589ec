#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <corio/acceptor.hpp>
#include <corio/stream.hpp>
#include <corio/transport.hpp>

namespace coriostream {

/// The socket options riostream's set_options gives one connection, in
/// corio's terms.
struct socket_setup {
    corio::transport transport = corio::transport::tcp;
    /// -B: SO_SNDBUF and SO_RCVBUF.
    std::size_t buffer_size = 0;
    /// RDMA_INLINE for this connection (connection_plan::inline_size).
    std::optional<std::size_t> inline_size;
    /// RDMA_IOMAPSIZE 1, which riostream sets and rstream does not.
    bool iomap = false;
    /// -k: keep-alive idle seconds; 0 leaves keep-alive off.
    std::size_t keepalive_seconds = 0;
    /// -b on a client: the local address it binds (any port) before
    /// connect, as rstream's client does.
    std::optional<boost::asio::ip::address> client_bind;
};

/// Opens a stream on `executor`, sets `setup`'s options and connects to the
/// first of `endpoints` that accepts, trying them in order. Each attempt
/// gives up after `timeout` (zero: never). Throws run_error naming the call
/// and the endpoint, as riostream's perror("rconnect") does.
boost::asio::awaitable<corio::stream>
connect_stream(const boost::asio::any_io_executor& executor,
               const std::vector<boost::asio::ip::tcp::endpoint>& endpoints,
               const socket_setup& setup, std::chrono::seconds timeout);

/// riostream's server_listen and the set_options it then applies to the
/// listening socket: reuse_address, the buffer sizes, and on rsockets the
/// RDMA options, which corio takes only before listen, so accepted sockets
/// inherit them from here. Throws run_error.
corio::acceptor open_listener(const boost::asio::any_io_executor& executor,
                              const boost::asio::ip::tcp::endpoint& local,
                              const socket_setup& setup);

/// Accepts one connection into a stream on `stream_executor` and gives it
/// the options an accepted socket can still take. Gives up after `timeout`
/// (zero: never). Must run on `listener`'s executor, a strand (or a
/// one-thread io_context). Throws
/// run_error.
boost::asio::awaitable<corio::stream> accept_stream(corio::acceptor& listener,
                                                    const boost::asio::any_io_executor& stream_executor,
                                                    const socket_setup& setup,
                                                    std::chrono::seconds timeout);

} // namespace coriostream
