#pragma once

#include <cstddef>
#include <string_view>

#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <boost/system/error_code.hpp>

#include <corio/detail/remote_mapping.hpp>

namespace corio::detail {

/// The only waits rpoll may be given. rdma-core v44 to v62 leaks an internal
/// counter when a finite rpoll timeout expires, after which blocking rpolls
/// spin at 100 % CPU; an enum keeps any other value from compiling.
enum class poll_timeout : int {
    immediate = 0,
    infinite = -1,
};

/// One transport's socket calls, with errno already turned into an
/// error_code. rsocket_ops and posix_socket_ops each provide one table;
/// an I/O object picks its table once, when it opens.
///
/// Conventions, as in Asio's socket_ops: calls that yield a count return it
/// and report failure through `ec` (returning 0); calls that only succeed or
/// fail return the error_code. recv and readv report a clean end of stream as
/// boost::asio::error::eof.
struct socket_ops {
    std::string_view name;

    int (*open)(int domain, int type, int protocol, boost::system::error_code& ec);
    boost::system::error_code (*bind)(int s, const sockaddr* addr, socklen_t len);
    boost::system::error_code (*listen)(int s, int backlog);
    int (*accept)(int s, sockaddr* addr, socklen_t* len, boost::system::error_code& ec);
    // A nonblocking connect: in_progress once started; try_again (rsockets
    // only) when it could not start yet and is to be made again later.
    boost::system::error_code (*connect)(int s, const sockaddr* addr, socklen_t len);
    boost::system::error_code (*shutdown)(int s, int how);
    boost::system::error_code (*close)(int s);

    std::size_t (*recv)(int s, void* buf, std::size_t len, int flags,
                        boost::system::error_code& ec);
    std::size_t (*send)(int s, const void* buf, std::size_t len, int flags,
                        boost::system::error_code& ec);
    std::size_t (*readv)(int s, const iovec* iov, int iovcnt, boost::system::error_code& ec);
    std::size_t (*writev)(int s, const iovec* iov, int iovcnt, boost::system::error_code& ec);
    // readv and writev with MSG_* flags (Asio's socket_base::message_flags):
    // a flag the transport cannot carry is refused with operation_not_supported
    // before anything moves, never dropped.
    std::size_t (*recvmsg)(int s, const iovec* iov, int iovcnt, int flags,
                           boost::system::error_code& ec);
    std::size_t (*sendmsg)(int s, const iovec* iov, int iovcnt, int flags,
                           boost::system::error_code& ec);

    std::size_t (*poll)(pollfd* fds, nfds_t nfds, poll_timeout timeout,
                        boost::system::error_code& ec);

    boost::system::error_code (*setsockopt)(int s, int level, int name, const void* value,
                                            socklen_t len);
    boost::system::error_code (*getsockopt)(int s, int level, int name, void* value,
                                            socklen_t* len);
    boost::system::error_code (*set_nonblocking)(int s, bool on);
    boost::system::error_code (*getpeername)(int s, sockaddr* addr, socklen_t* len);
    boost::system::error_code (*getsockname)(int s, sockaddr* addr, socklen_t* len);

    off_t (*iomap)(int s, void* buf, std::size_t len, int prot, off_t offset,
                   boost::system::error_code& ec);
    boost::system::error_code (*iounmap)(int s, void* buf, std::size_t len);
    std::size_t (*iowrite)(int s, const void* buf, std::size_t count, off_t offset,
                           const remote_mapping& target, int flags,
                           boost::system::error_code& ec);

    // Datagram sockets. One call moves one whole datagram: sendto sends the
    // gathered buffers as one datagram, to `to` (null: the connected peer);
    // recvfrom scatters one datagram into the buffers and gives its source
    // in `from` (may be null), a datagram longer than the buffers losing
    // its tail, as recvfrom(2) does. connect_datagram sets a datagram
    // socket's peer, which never waits. max_datagram returns the largest
    // payload the transport carries for `family` (AF_INET, AF_INET6), or 0
    // when it has no datagram sockets.
    boost::system::error_code (*connect_datagram)(int s, const sockaddr* addr, socklen_t len);
    std::size_t (*sendto)(int s, const iovec* iov, int iovcnt, const sockaddr* to,
                          socklen_t to_len, boost::system::error_code& ec);
    std::size_t (*recvfrom)(int s, const iovec* iov, int iovcnt, sockaddr* from,
                            socklen_t* from_len, boost::system::error_code& ec);
    std::size_t (*max_datagram)(int family);

    /// Bytes a read can take now without waiting (Asio's available()), as
    /// the transport can tell; each table says how exact it is.
    std::size_t (*available)(int s, boost::system::error_code& ec);
};

} // namespace corio::detail
