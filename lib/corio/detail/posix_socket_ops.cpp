#include "corio/detail/posix_socket_ops.hpp"

#include <cerrno>

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <corio/detail/errno_result.hpp>
#include <corio/detail/framed_tcp_ops.hpp>
#include <corio/error.hpp>

namespace corio::detail {

namespace {

using boost::system::error_code;

int open(int domain, int type, int protocol, error_code& ec) {
    const int s = ::socket(domain, type | SOCK_CLOEXEC, protocol);
    ec = s < 0 ? last_error() : error_code{};
    return s;
}

error_code bind(int s, const sockaddr* addr, socklen_t len) {
    return status_of(::bind(s, addr, len));
}

error_code listen(int s, int backlog) { return status_of(::listen(s, backlog)); }

int accept(int s, sockaddr* addr, socklen_t* len, error_code& ec) {
    const int n = ::accept4(s, addr, len, SOCK_CLOEXEC);
    ec = n < 0 ? last_error() : error_code{};
    return n;
}

error_code connect(int s, const sockaddr* addr, socklen_t len) {
    return status_of(::connect(s, addr, len));
}

error_code shutdown(int s, int how) { return status_of(::shutdown(s, how)); }

error_code close(int s) {
    // Before the number can be reused: what iomap_size recorded for it.
    framed_tcp::forget(s);
    // Linux releases the descriptor even when close reports EINTR; retrying
    // could close a descriptor another thread has just been given.
    const int result = ::close(s);
    if (result == -1 && errno == EINTR)
        return {};
    return status_of(result);
}

std::size_t recv(int s, void* buf, std::size_t len, int flags, error_code& ec) {
    return received_count(::recv(s, buf, len, flags), len > 0, ec);
}

// MSG_NOSIGNAL: a peer that went away must become EPIPE, not kill the process.
std::size_t send(int s, const void* buf, std::size_t len, int flags, error_code& ec) {
    return count_of(::send(s, buf, len, flags | MSG_NOSIGNAL), ec);
}

// One buffer, the common case, goes to recv and send, as Asio's one-buffer
// operations do: the kernel's readv and sendmsg first copy in and check an
// iovec array (and readv goes through the file layer's hooks), which cost
// more per call than the data of a small message.
std::size_t readv(int s, const iovec* iov, int iovcnt, error_code& ec) {
    if (iovcnt == 1)
        return recv(s, iov[0].iov_base, iov[0].iov_len, 0, ec);
    return received_count(::readv(s, iov, iovcnt), wants_bytes(iov, iovcnt), ec);
}

// writev cannot take MSG_NOSIGNAL, so gather writes go through sendmsg.
std::size_t writev(int s, const iovec* iov, int iovcnt, error_code& ec) {
    if (iovcnt == 1)
        return send(s, iov[0].iov_base, iov[0].iov_len, 0, ec);
    msghdr message{};
    message.msg_iov = const_cast<iovec*>(iov);
    message.msg_iovlen = static_cast<std::size_t>(iovcnt);
    return count_of(::sendmsg(s, &message, MSG_NOSIGNAL), ec);
}

std::size_t recvmsg(int s, const iovec* iov, int iovcnt, int flags, error_code& ec) {
    msghdr message{};
    message.msg_iov = const_cast<iovec*>(iov);
    message.msg_iovlen = static_cast<std::size_t>(iovcnt);
    return received_count(::recvmsg(s, &message, flags), wants_bytes(iov, iovcnt), ec);
}

std::size_t sendmsg(int s, const iovec* iov, int iovcnt, int flags, error_code& ec) {
    msghdr message{};
    message.msg_iov = const_cast<iovec*>(iov);
    message.msg_iovlen = static_cast<std::size_t>(iovcnt);
    return count_of(::sendmsg(s, &message, flags | MSG_NOSIGNAL), ec);
}

std::size_t poll(pollfd* fds, nfds_t nfds, poll_timeout timeout, error_code& ec) {
    return count_of(::poll(fds, nfds, static_cast<int>(timeout)), ec);
}

// RDMA_IOMAPSIZE is recorded, not refused: above zero it turns on the TCP
// emulation of riomap/riowrite, framed_tcp_ops, at connect or listen.
error_code setsockopt(int s, int level, int name, const void* value, socklen_t len) {
    if (framed_tcp::is_iomap_size_option(level, name))
        return framed_tcp::set_iomap_size(s, value, len);
    return status_of(::setsockopt(s, level, name, value, len));
}

error_code getsockopt(int s, int level, int name, void* value, socklen_t* len) {
    if (framed_tcp::is_iomap_size_option(level, name))
        return framed_tcp::get_iomap_size(s, value, len);
    return status_of(::getsockopt(s, level, name, value, len));
}

error_code set_nonblocking(int s, bool on) {
    const int flags = ::fcntl(s, F_GETFL);
    if (flags < 0)
        return last_error();
    return status_of(::fcntl(s, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK));
}

error_code getpeername(int s, sockaddr* addr, socklen_t* len) {
    return status_of(::getpeername(s, addr, len));
}

error_code getsockname(int s, sockaddr* addr, socklen_t* len) {
    return status_of(::getsockname(s, addr, len));
}

off_t iomap(int, void*, std::size_t, int, off_t, error_code& ec) {
    ec = error::not_supported_by_transport;
    return -1;
}

error_code iounmap(int, void*, std::size_t) { return error::not_supported_by_transport; }

std::size_t iowrite(int, const void*, std::size_t, off_t, const remote_mapping&, int,
                    error_code& ec) {
    ec = error::not_supported_by_transport;
    return 0;
}

// MSG_NOSIGNAL as for send: a connected UDP socket can report EPIPE too.
std::size_t sendto(int s, const iovec* iov, int iovcnt, const sockaddr* to, socklen_t to_len,
                   error_code& ec) {
    msghdr message{};
    message.msg_name = const_cast<sockaddr*>(to);
    message.msg_namelen = to ? to_len : 0;
    message.msg_iov = const_cast<iovec*>(iov);
    message.msg_iovlen = static_cast<std::size_t>(iovcnt);
    return count_of(::sendmsg(s, &message, MSG_NOSIGNAL), ec);
}

// A zero-length datagram is a datagram, not an end of stream: no eof here.
std::size_t recvfrom(int s, const iovec* iov, int iovcnt, sockaddr* from, socklen_t* from_len,
                     error_code& ec) {
    msghdr message{};
    message.msg_name = from;
    message.msg_namelen = from_len ? *from_len : 0;
    message.msg_iov = const_cast<iovec*>(iov);
    message.msg_iovlen = static_cast<std::size_t>(iovcnt);
    const std::size_t n = count_of(::recvmsg(s, &message, 0), ec);
    if (from_len)
        *from_len = message.msg_namelen;
    return n;
}

// The IP length field (65535) less the UDP header and, for IPv4, the
// smallest IP header; IPv6 counts its fixed header outside the payload.
std::size_t max_datagram(int family) { return family == AF_INET6 ? 65527 : 65507; }

// Exact: the kernel's count (for a datagram socket, the next datagram's size).
std::size_t available(int s, error_code& ec) {
    int n = 0;
    if (::ioctl(s, FIONREAD, &n) != 0) {
        ec = {errno, boost::system::system_category()};
        return 0;
    }
    ec.clear();
    return static_cast<std::size_t>(n);
}

} // namespace

const socket_ops posix_socket_ops = {
    .name = "tcp",
    .open = open,
    .bind = bind,
    .listen = listen,
    .accept = accept,
    .connect = connect,
    .shutdown = shutdown,
    .close = close,
    .recv = recv,
    .send = send,
    .readv = readv,
    .writev = writev,
    .recvmsg = recvmsg,
    .sendmsg = sendmsg,
    .poll = poll,
    .setsockopt = setsockopt,
    .getsockopt = getsockopt,
    .set_nonblocking = set_nonblocking,
    .getpeername = getpeername,
    .getsockname = getsockname,
    .iomap = iomap,
    .iounmap = iounmap,
    .iowrite = iowrite,
    .connect_datagram = connect,
    .sendto = sendto,
    .recvfrom = recvfrom,
    .max_datagram = max_datagram,
    .available = available,
};

} // namespace corio::detail
