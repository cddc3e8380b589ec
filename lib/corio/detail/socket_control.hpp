#pragma once

#include <cstddef>

#include <sys/types.h>
#include <sys/uio.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

#include <corio/detail/function_ref.hpp>
#include <corio/detail/rpoll_operation.hpp>
#include <corio/detail/socket_ops.hpp>
#include <corio/transport.hpp>

namespace corio {
class rpoll_service;
}

namespace corio::detail {

class socket_impl;

// The non-template work behind corio's I/O objects, kept out of the headers
// so that each translation unit using a stream compiles it once.

/// Opens a nonblocking socket of `t` (resolved) and family `family` on `impl`.
boost::system::error_code open_socket(rpoll_service& service, socket_impl& impl, transport t,
                                      int family);

/// How a nonblocking connect call left its socket.
enum class connect_state {
    finished,    ///< connected, or failed: the error says which
    in_progress, ///< wait for the socket to be writable, then read SO_ERROR
    deferred,    ///< not started yet (an rsocket's room, see rsocket_ops.cpp):
                 ///< make the call again on the service's tick
};

/// Starts a nonblocking connect; opens a socket of the endpoint's family and
/// `t` first if `impl` has none. `state` says whether and how to wait.
boost::system::error_code start_connect(rpoll_service& service, socket_impl& impl, transport t,
                                        const boost::asio::ip::tcp::endpoint& peer,
                                        connect_state& state);

/// Makes a deferred connect's call again; `impl.io_mutex_` is held.
boost::system::error_code retry_connect(rpoll_service& service, socket_impl& impl,
                                        const boost::asio::ip::tcp::endpoint& peer,
                                        connect_state& state);

boost::system::error_code bind_socket(socket_impl& impl,
                                      const boost::asio::ip::tcp::endpoint& local);
boost::system::error_code listen_socket(rpoll_service& service, socket_impl& impl, int backlog);

/// The local (remote false) or peer (remote true) address of `impl`'s socket.
boost::asio::ip::tcp::endpoint socket_endpoint(socket_impl& impl, bool remote,
                                               boost::system::error_code& ec);

/// A blocking call: `call` (made with the I/O mutex held, on an open
/// socket) until it no longer would block, waiting with rpoll on this socket
/// (and the wake eventfd close() signals) for `kind` in between. A close()
/// from another thread ends it with operation_aborted.
std::size_t blocking_call(rpoll_service& service, socket_impl& impl, wait_kind kind,
                          function_ref<std::size_t(boost::system::error_code&)> call,
                          boost::system::error_code& ec);

/// One nonblocking readv or writev (`flags` 0), or recvmsg or sendmsg with
/// `flags`: the hot path keeps the flagless calls.
inline std::size_t transfer_once(const socket_ops& ops, int s, wait_kind kind, const iovec* iov,
                                 int count, int flags, boost::system::error_code& ec) {
    if (kind == wait_kind::read)
        return flags == 0 ? ops.readv(s, iov, count, ec) : ops.recvmsg(s, iov, count, flags, ec);
    return flags == 0 ? ops.writev(s, iov, count, ec) : ops.sendmsg(s, iov, count, flags, ec);
}

/// A blocking read_some or write_some (receive or send with `flags`): the
/// nonblocking call, then rpoll on this socket (and the wake eventfd close()
/// signals) until it can go on. A close() from another thread ends it with
/// operation_aborted.
std::size_t blocking_transfer(rpoll_service& service, socket_impl& impl, wait_kind kind,
                              const iovec* iov, int count, std::size_t total,
                              boost::system::error_code& ec, int flags = 0);

// try_transfer, the non-blocking read_some and write_some, is inline in
// try_transfer.hpp.

/// A blocking iowrite of `size` > 0 bytes: riowrite into the peer's mapping
/// at `offset` until all of `data` is written, waiting like
/// blocking_transfer when the peer's side has no room.
std::size_t blocking_iowrite(rpoll_service& service, socket_impl& impl, const void* data,
                             std::size_t size, off_t offset, boost::system::error_code& ec);

// try_iowrite, the non-blocking iowrite, is inline in try_iowrite.hpp.

/// non_blocking(mode): records the mode (the descriptor itself is always
/// nonblocking); bad_descriptor when closed.
boost::system::error_code set_non_blocking(socket_impl& impl, bool mode);

/// available(): what a read can take now, as the transport tells.
std::size_t socket_available(socket_impl& impl, boost::system::error_code& ec);

/// Refuses an option the socket can no longer take: RDMA options after
/// connect or listen (rsockets apply them when the connection is set up).
boost::system::error_code check_option_allowed(const socket_impl& impl, bool rdma_only);

} // namespace corio::detail
