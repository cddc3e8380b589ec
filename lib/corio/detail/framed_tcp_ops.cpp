#include "corio/detail/framed_tcp_ops.hpp"

#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>

#include <rdma/rsocket.h>
#include <sys/socket.h>

#include <boost/asio/error.hpp>

#include <corio/detail/framed_tcp_socket.hpp>
#include <corio/detail/posix_socket_ops.hpp>
#include <corio/error.hpp>
#include <corio/socket_base.hpp>

// <rdma/rsocket.h> is here for SOL_RDMA and RDMA_IOMAPSIZE only; nothing in
// this file calls rsockets.

namespace corio::detail {

namespace {

using boost::system::error_code;

/// The state of every kernel socket that asked for the emulation, by
/// descriptor. Lookups happen on every call of a framed socket; a shared_ptr
/// keeps the state alive through a call that races with a close.
class framed_registry {
public:
    std::shared_ptr<framed_tcp_socket> find(int fd) {
        std::lock_guard lock(mutex_);
        const auto it = sockets_.find(fd);
        return it == sockets_.end() ? nullptr : it->second;
    }

    std::shared_ptr<framed_tcp_socket> find_or_create(int fd, int iomap_size) {
        std::lock_guard lock(mutex_);
        auto& slot = sockets_[fd];
        if (!slot)
            slot = std::make_shared<framed_tcp_socket>(iomap_size);
        return slot;
    }

    void erase(int fd) noexcept {
        std::lock_guard lock(mutex_);
        sockets_.erase(fd);
    }

private:
    std::mutex mutex_;
    std::unordered_map<int, std::shared_ptr<framed_tcp_socket>> sockets_;
};

framed_registry& registry() {
    static framed_registry instance;
    return instance;
}

/// The state of a descriptor on framed_tcp_ops; an unknown one never came
/// through this table and is refused like a bad descriptor.
std::shared_ptr<framed_tcp_socket> state_of(int fd, error_code& ec) {
    auto state = registry().find(fd);
    ec = state ? error_code{} : error_code(boost::asio::error::bad_descriptor);
    return state;
}

// Flags that would change what a call means (MSG_OOB, ...) have no framed
// equivalent, nor has MSG_PEEK outside recvmsg; MSG_DONTWAIT and MSG_NOSIGNAL
// are what corio does anyway.
bool plain_flags(int flags) noexcept { return (flags & ~(MSG_DONTWAIT | MSG_NOSIGNAL)) == 0; }

int open(int domain, int type, int protocol, error_code& ec) {
    return posix_socket_ops.open(domain, type, protocol, ec);
}

error_code bind(int s, const sockaddr* addr, socklen_t len) {
    return posix_socket_ops.bind(s, addr, len);
}

error_code listen(int s, int backlog) { return posix_socket_ops.listen(s, backlog); }

int accept(int s, sockaddr* addr, socklen_t* len, error_code& ec) {
    auto listener = state_of(s, ec);
    if (ec)
        return -1;
    const int fd = posix_socket_ops.accept(s, addr, len, ec);
    if (ec)
        return -1;
    // An accepted socket frames as its listener asked, as rsockets pass
    // RDMA_IOMAPSIZE on to the sockets they accept.
    registry().erase(fd); // a stale entry of an fd number closed elsewhere
    registry().find_or_create(fd, listener->iomap_size())->start();
    return fd;
}

error_code connect(int s, const sockaddr* addr, socklen_t len) {
    error_code ec;
    auto state = state_of(s, ec);
    if (ec)
        return ec;
    ec = posix_socket_ops.connect(s, addr, len);
    if (!ec || ec == boost::asio::error::in_progress || ec == boost::asio::error::would_block)
        state->start();
    return ec;
}

error_code shutdown(int s, int how) {
    if (how != SHUT_RD) {
        if (auto state = registry().find(s))
            state->flush(s);
    }
    return posix_socket_ops.shutdown(s, how);
}

error_code close(int s) {
    if (auto state = registry().find(s))
        state->flush(s);
    return posix_socket_ops.close(s); // which forgets the state
}

std::size_t recv(int s, void* buf, std::size_t len, int flags, error_code& ec) {
    auto state = state_of(s, ec);
    if (ec)
        return 0;
    if (!plain_flags(flags)) {
        ec = boost::asio::error::operation_not_supported;
        return 0;
    }
    const iovec part{buf, len};
    return state->receive(s, &part, 1, ec);
}

std::size_t send(int s, const void* buf, std::size_t len, int flags, error_code& ec) {
    auto state = state_of(s, ec);
    if (ec)
        return 0;
    if (!plain_flags(flags)) {
        ec = boost::asio::error::operation_not_supported;
        return 0;
    }
    const iovec part{const_cast<void*>(buf), len};
    return state->send(s, &part, 1, ec);
}

std::size_t readv(int s, const iovec* iov, int iovcnt, error_code& ec) {
    auto state = state_of(s, ec);
    return ec ? 0 : state->receive(s, iov, iovcnt, ec);
}

std::size_t writev(int s, const iovec* iov, int iovcnt, error_code& ec) {
    auto state = state_of(s, ec);
    return ec ? 0 : state->send(s, iov, iovcnt, ec);
}

// MSG_PEEK looks into the current data frame (framed_tcp_socket::receive).
// MSG_OOB would put a byte outside the frames, and the other MSG_* flags
// mean nothing to a framed stream, so they are refused.
std::size_t recvmsg(int s, const iovec* iov, int iovcnt, int flags, error_code& ec) {
    auto state = state_of(s, ec);
    if (ec)
        return 0;
    const bool peek = (flags & MSG_PEEK) != 0;
    if (!plain_flags(flags & ~MSG_PEEK)) {
        ec = boost::asio::error::operation_not_supported;
        return 0;
    }
    return state->receive(s, iov, iovcnt, ec, peek);
}

std::size_t sendmsg(int s, const iovec* iov, int iovcnt, int flags, error_code& ec) {
    auto state = state_of(s, ec);
    if (ec)
        return 0;
    if (!plain_flags(flags)) {
        ec = boost::asio::error::operation_not_supported;
        return 0;
    }
    return state->send(s, iov, iovcnt, ec);
}

std::size_t poll(pollfd* fds, nfds_t nfds, poll_timeout timeout, error_code& ec) {
    return posix_socket_ops.poll(fds, nfds, timeout, ec);
}

error_code setsockopt(int s, int level, int name, const void* value, socklen_t len) {
    if (framed_tcp::is_iomap_size_option(level, name))
        return framed_tcp::set_iomap_size(s, value, len);
    return posix_socket_ops.setsockopt(s, level, name, value, len);
}

error_code getsockopt(int s, int level, int name, void* value, socklen_t* len) {
    if (framed_tcp::is_iomap_size_option(level, name))
        return framed_tcp::get_iomap_size(s, value, len);
    return posix_socket_ops.getsockopt(s, level, name, value, len);
}

error_code set_nonblocking(int s, bool on) { return posix_socket_ops.set_nonblocking(s, on); }

error_code getpeername(int s, sockaddr* addr, socklen_t* len) {
    return posix_socket_ops.getpeername(s, addr, len);
}

error_code getsockname(int s, sockaddr* addr, socklen_t* len) {
    return posix_socket_ops.getsockname(s, addr, len);
}

off_t iomap(int s, void* buf, std::size_t len, int prot, off_t offset, error_code& ec) {
    auto state = state_of(s, ec);
    return ec ? -1 : state->iomap(buf, len, prot, offset, ec);
}

error_code iounmap(int s, void* buf, std::size_t len) {
    error_code ec;
    auto state = state_of(s, ec);
    return ec ? ec : state->iounmap(buf, len);
}

std::size_t iowrite(int s, const void* buf, std::size_t count, off_t offset,
                    const remote_mapping& target, int flags, error_code& ec) {
    auto state = state_of(s, ec);
    if (ec)
        return 0;
    if (!plain_flags(flags)) {
        ec = boost::asio::error::operation_not_supported;
        return 0;
    }
    return state->iowrite(s, buf, count, offset, target, ec);
}

// A framed socket is a TCP stream: it has no datagrams to move.
std::size_t sendto(int, const iovec*, int, const sockaddr*, socklen_t, error_code& ec) {
    ec = error::not_supported_by_transport;
    return 0;
}

std::size_t recvfrom(int, const iovec*, int, sockaddr*, socklen_t*, error_code& ec) {
    ec = error::not_supported_by_transport;
    return 0;
}

std::size_t max_datagram(int) { return 0; }

std::size_t available(int s, error_code& ec) {
    auto state = state_of(s, ec);
    return ec ? 0 : state->available(s, ec);
}

} // namespace

const socket_ops framed_tcp_ops = {
    .name = "tcp-framed",
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

namespace framed_tcp {

bool is_iomap_size_option(int level, int name) noexcept {
    return level == SOL_RDMA && name == RDMA_IOMAPSIZE;
}

error_code set_iomap_size(int fd, const void* value, socklen_t len) {
    if (value == nullptr || len != sizeof(int))
        return boost::asio::error::invalid_argument;
    int requested = 0;
    std::memcpy(&requested, value, sizeof requested);
    if (requested < 0 || requested > socket_base::iomap_size::max_value)
        return boost::asio::error::invalid_argument;
    if (auto state = registry().find(fd))
        return state->set_iomap_size(socket_base::iomap_size::rounded(requested));
    // Too late once connected, as on rsockets (socket_base maps this to
    // option_after_connect).
    sockaddr_storage peer{};
    socklen_t peer_len = sizeof peer;
    if (posix_socket_ops.getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) ==
        error_code())
        return boost::asio::error::invalid_argument;
    if (requested > 0)
        (void)registry().find_or_create(fd, socket_base::iomap_size::rounded(requested));
    return {};
}

error_code get_iomap_size(int fd, void* value, socklen_t* len) {
    if (value == nullptr || len == nullptr || *len < static_cast<socklen_t>(sizeof(int)))
        return boost::asio::error::invalid_argument;
    const auto state = registry().find(fd);
    const int size = state ? state->iomap_size() : 0;
    std::memcpy(value, &size, sizeof size);
    *len = sizeof size;
    return {};
}

void forget(int fd) noexcept { registry().erase(fd); }

void adopt_if_requested(unique_socket& socket) {
    if (socket.ops() != &posix_socket_ops)
        return;
    const auto state = registry().find(socket.get());
    if (!state || state->iomap_size() == 0)
        return;
    socket = unique_socket(socket.release(), framed_tcp_ops);
}

} // namespace framed_tcp

} // namespace corio::detail
