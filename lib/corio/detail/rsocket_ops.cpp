#include "corio/detail/rsocket_ops.hpp"

#include <cerrno>
#include <mutex>
#include <unordered_map>
#include <utility>

#include <fcntl.h>
#include <rdma/rsocket.h>

#include <corio/detail/errno_result.hpp>
#include <corio/error.hpp>

namespace corio::detail {

namespace {

using boost::system::error_code;

// rrecv, rsend, rreadv, rwritev, riomap, riounmap and riowrite find their
// socket with v44's unchecked idm_at: a number that never was an rsocket
// reads past the fd table and crashes. rfcntl looks up with bounds checks and
// costs a few nanoseconds, so the data calls ask it first.
// v44's rclose takes the socket out of its table before it unmaps the
// socket's iomaps, so each riounmap it makes fails with EBADF and its loop
// over the mappings never ends: rclose spins forever on a socket with a live
// mapping. The seam remembers every mapping and unmaps what is left before
// rclose. Mapping is rare (set-up, not the data path), so one lock will do.
class live_iomaps {
public:
    void add(int s, void* buf, std::size_t len) {
        std::lock_guard lock(mutex_);
        mappings_.emplace(s, std::pair(buf, len));
    }

    void remove(int s, void* buf, std::size_t len) {
        std::lock_guard lock(mutex_);
        auto [first, last] = mappings_.equal_range(s);
        for (auto it = first; it != last; ++it) {
            if (it->second == std::pair(buf, len)) {
                mappings_.erase(it);
                return;
            }
        }
    }

    void unmap_all(int s) {
        std::lock_guard lock(mutex_);
        auto [first, last] = mappings_.equal_range(s);
        for (auto it = first; it != last; ++it)
            ::riounmap(s, it->second.first, it->second.second);
        mappings_.erase(s);
    }

private:
    std::mutex mutex_;
    std::unordered_multimap<int, std::pair<void*, std::size_t>> mappings_;
};

live_iomaps& iomaps() {
    static live_iomaps instance;
    return instance;
}

bool is_rsocket(int s, error_code& ec) noexcept {
    if (::rfcntl(s, F_GETFL) >= 0)
        return true;
    ec = last_error();
    return false;
}

int open(int domain, int type, int protocol, error_code& ec) {
    // rsocket() on v44 rejects SOCK_NONBLOCK with ENOTSUP, and newer versions
    // only record it without making rconnect nonblocking; rfcntl is the one
    // way that works everywhere. rsockets have no exec semantics to inherit,
    // so SOCK_CLOEXEC is dropped.
    const bool nonblocking = (type & SOCK_NONBLOCK) != 0;
    type &= ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
    const int s = ::rsocket(domain, type, protocol);
    if (s < 0) {
        ec = errno == ENODEV ? make_error_code(error::no_rdma_device) : last_error();
        return -1;
    }
    if (nonblocking && ::rfcntl(s, F_SETFL, O_NONBLOCK) < 0) {
        ec = last_error();
        ::rclose(s);
        return -1;
    }
    ec.clear();
    return s;
}

error_code bind(int s, const sockaddr* addr, socklen_t len) {
    return status_of(::rbind(s, addr, len));
}

error_code listen(int s, int backlog) { return status_of(::rlisten(s, backlog)); }

int accept(int s, sockaddr* addr, socklen_t* len, error_code& ec) {
    const int n = ::raccept(s, addr, len);
    ec = n < 0 ? last_error() : error_code{};
    return n;
}

error_code connect(int s, const sockaddr* addr, socklen_t len) {
    return status_of(::rconnect(s, addr, len));
}

error_code shutdown(int s, int how) { return status_of(::rshutdown(s, how)); }

error_code close(int s) {
    iomaps().unmap_all(s);
    // v44 returns a positive EBADF, not -1 with errno, for an fd it does not know.
    const int result = ::rclose(s);
    if (result > 0)
        return {result, boost::system::system_category()};
    return status_of(result);
}

std::size_t recv(int s, void* buf, std::size_t len, int flags, error_code& ec) {
    if (!is_rsocket(s, ec))
        return 0;
    return received_count(::rrecv(s, buf, len, flags), len > 0, ec);
}

std::size_t send(int s, const void* buf, std::size_t len, int flags, error_code& ec) {
    if (!is_rsocket(s, ec))
        return 0;
    return count_of(::rsend(s, buf, len, flags), ec);
}

std::size_t readv(int s, const iovec* iov, int iovcnt, error_code& ec) {
    if (!is_rsocket(s, ec))
        return 0;
    return received_count(::rreadv(s, iov, iovcnt), wants_bytes(iov, iovcnt), ec);
}

std::size_t writev(int s, const iovec* iov, int iovcnt, error_code& ec) {
    if (!is_rsocket(s, ec))
        return 0;
    return count_of(::rwritev(s, iov, iovcnt), ec);
}

std::size_t poll(pollfd* fds, nfds_t nfds, poll_timeout timeout, error_code& ec) {
    return count_of(::rpoll(fds, nfds, static_cast<int>(timeout)), ec);
}

error_code setsockopt(int s, int level, int name, const void* value, socklen_t len) {
    return status_of(::rsetsockopt(s, level, name, value, len));
}

error_code getsockopt(int s, int level, int name, void* value, socklen_t* len) {
    return status_of(::rgetsockopt(s, level, name, value, len));
}

error_code set_nonblocking(int s, bool on) {
    const int flags = ::rfcntl(s, F_GETFL);
    if (flags < 0)
        return last_error();
    return status_of(::rfcntl(s, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK));
}

error_code getpeername(int s, sockaddr* addr, socklen_t* len) {
    return status_of(::rgetpeername(s, addr, len));
}

error_code getsockname(int s, sockaddr* addr, socklen_t* len) {
    return status_of(::rgetsockname(s, addr, len));
}

off_t iomap(int s, void* buf, std::size_t len, int prot, off_t offset, error_code& ec) {
    if (!is_rsocket(s, ec))
        return -1;
    const off_t mapped = ::riomap(s, buf, len, prot, 0, offset);
    if (mapped == -1) {
        ec = last_error();
        return -1;
    }
    ec.clear();
    iomaps().add(s, buf, len);
    return mapped;
}

error_code iounmap(int s, void* buf, std::size_t len) {
    if (error_code ec; !is_rsocket(s, ec))
        return ec;
    const auto ec = status_of(::riounmap(s, buf, len));
    if (!ec)
        iomaps().remove(s, buf, len);
    return ec;
}

std::size_t iowrite(int s, const void* buf, std::size_t count, off_t offset,
                    const remote_mapping& target, int flags, error_code& ec) {
    ec.clear();
    if (count == 0)
        return 0;
    // v44 loops forever when a write crosses a mapping's end: its "move to the
    // next mapping" test is `offset > end` where it needs `>=`, so the chunk
    // size becomes 0 at the boundary and never grows again.
    if (!target.contains(offset, count)) {
        ec = error::iowrite_out_of_bounds;
        return 0;
    }
    if (!is_rsocket(s, ec))
        return 0;
    const std::size_t written = ::riowrite(s, buf, count, offset, flags);
    // riowrite returns size_t but signals failure with (size_t)-1 and errno.
    if (written == static_cast<std::size_t>(-1)) {
        ec = last_error();
        return 0;
    }
    // 0 for a nonempty write, with errno untouched, means no mapping the peer
    // published covers the offset.
    if (written == 0)
        ec = error::no_remote_mapping;
    return written;
}

} // namespace

const socket_ops rsocket_ops = {
    .name = "rsocket",
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
    .poll = poll,
    .setsockopt = setsockopt,
    .getsockopt = getsockopt,
    .set_nonblocking = set_nonblocking,
    .getpeername = getpeername,
    .getsockname = getsockname,
    .iomap = iomap,
    .iounmap = iounmap,
    .iowrite = iowrite,
};

} // namespace corio::detail
