#include "corio/rpoll_service.hpp"

#include <chrono>
#include <cstdint>
#include <thread>
#include <utility>

#include <sys/eventfd.h>
#include <unistd.h>

#include <boost/asio/error.hpp>

#include <corio/detail/background_closer.hpp>
#include <corio/detail/drain_fd.hpp>
#include <corio/detail/rsocket_ops.hpp>

// Closing and shutting down: nothing that can block runs on the caller's
// thread. rsocket closes and shutdowns go to the background closer; a socket
// whose descriptor an rpoll under way (the poller's, or a blocking
// transfer's) still has is left to that rpoll's caller; an rshutdown never
// runs beside its socket's own I/O (socket_impl::shutting_down_).

namespace corio {

using detail::rpoll_operation;
using detail::socket_impl;

boost::system::error_code rpoll_service::close(socket_impl& impl) {
    std::vector<rpoll_operation*> aborted;
    detail::unique_socket socket;
    {
        // io_mutex_ first: it waits for a run in the middle of its call on
        // this socket, and it is held until the descriptor is taken, so that
        // no attach (a connect opening the socket on another thread) comes
        // between closed_ and the descriptor. Code under the service mutex
        // alone reads socket_ only while closed_ is clear; without this, an
        // attach after the block below cleared closed_ again, and the
        // descriptor went while such a read was under way (TSan: close()
        // against a connect's implicit open, in arm_epoll and in
        // update_reactor_waits).
        std::lock_guard io_lock(impl.io_mutex_);
        {
            std::lock_guard lock(mutex_);
            abort_queued(impl, aborted);
            impl.closed_ = true;
            impl.retry_accept_ = false;
            impl.retry_connect_ = false;
            update_watch(impl);
        }
        // Every riomap region goes now, not with the background rclose:
        // once close() returns the application may free that memory, and a
        // peer's riowrite must not reach it. riounmap deregisters the
        // memory and waits for nothing.
        for (const auto& [address, length] : impl.local_regions_)
            (void)impl.socket_.ops()->iounmap(impl.socket_.get(), address, length);
        impl.local_regions_.clear();
        socket = std::move(impl.socket_);
        impl.phase_ = socket_impl::phase::closed;
    }
    for (auto* op : aborted)
        op->post_run();

    {
        std::unique_lock lock(mutex_);
        if (impl.in_poll_ != socket_impl::poller::none) {
            // An rpoll under way has the descriptor in its set: whoever made
            // it disposes of the socket once rpoll returns.
            deferred_closes_[impl.in_poll_ == socket_impl::poller::thread ? 0 : 1].push_back(
                std::move(socket));
            wake_poller(lock);
            return {};
        }
        if (impl.blocking_waiters_ > 0) {
            // So has a blocking read_some or write_some: the last of them
            // disposes of it once its rpoll returns, which this wakes.
            impl.blocking_close_ = std::move(socket);
            const std::uint64_t one = 1;
            [[maybe_unused]] const auto n = ::write(impl.blocking_wake_fd_, &one, sizeof one);
            return {};
        }
    }
    // Listening rsockets too are closed in the background: v44's rclose of
    // a listener takes librdmacm's process-wide svc_mut and waits for the
    // listen service thread, either of which a background rclose may hold.
    // Until that rclose, the listen thread may still complete a connection
    // for the closed listener (doc/architecture.md).
    return dispose(std::move(socket));
}

boost::system::error_code rpoll_service::dispose(detail::unique_socket socket) {
    if (!socket.is_valid())
        return {};
    if (socket.ops() != &detail::rsocket_ops)
        return socket.reset();
    const int fd = socket.release();
    // rclose's error has nowhere to go from that thread; rdma-core reports
    // none for a socket it knows. A closer that cannot start a thread still
    // queues the close and says so here.
    return detail::run_in_background(fd, [fd] { (void)detail::rsocket_ops.close(fd); });
}

boost::system::error_code rpoll_service::shutdown(socket_impl& impl, int how) {
    int fd = -1;
    {
        std::lock_guard io_lock(impl.io_mutex_);
        if (!impl.socket_.is_valid())
            return boost::asio::error::bad_descriptor;
        if (impl.socket_.ops() != &detail::rsocket_ops)
            return impl.socket_.ops()->shutdown(impl.socket_.get(), how);
        fd = impl.socket_.get();
    }
    // From here until the rshutdown returns, nothing else calls into the
    // socket (socket_impl::shutting_down_); raised now, on the caller's
    // thread, so that an operation started right after this call already
    // waits for it.
    {
        std::lock_guard lock(mutex_);
        impl.shutting_down_.fetch_add(1, std::memory_order_release);
    }
    // The socket's own lock is not held while rshutdown runs: it may wait
    // for the peer, which may be served by this io_context, whose runs on
    // other sockets take their own locks only. A close() after this
    // shutdown queues behind it (same key), so the descriptor is still this
    // socket's when the job runs.
    return detail::run_in_background(
        fd, [anchor = anchor_, self = impl.shared_from_this(), fd, how] {
            shutdown_in_background(*anchor, *self, fd, how);
        });
}

void rpoll_service::shutdown_in_background(background_anchor& anchor, socket_impl& impl, int fd,
                                           int how) {
    // A run in the middle of its call on this socket ends first; runs after
    // it see shutting_down_ under the same lock.
    { std::lock_guard io_lock(impl.io_mutex_); }
    // Then no rpoll may have the descriptor in its set: a poller rebuilds
    // its set without it once woken, a blocking wait returns and does not
    // come back while shutting_down_ is raised.
    bool closed = false;
    for (;;) {
        {
            std::lock_guard anchor_lock(anchor.mutex);
            rpoll_service* service = anchor.service;
            if (!service)
                break; // the service is gone, and with it every poller
            std::unique_lock lock(service->mutex_);
            // Closed meanwhile: its rclose, queued behind this job, shuts it
            // down itself. Waiting on would never end when the I/O object is
            // gone too: a poller resets in_poll_ only for sockets still in
            // the registry, so this job would spin and the rclose behind it
            // never run (the soak saw the descriptors stay open).
            if (impl.closed_) {
                closed = true;
                break;
            }
            if (impl.in_poll_ == socket_impl::poller::none && impl.blocking_waiters_ == 0)
                break;
            service->rpoll_set_dirty_ = true;
            service->wake_poller(lock);
            if (impl.blocking_waiters_ > 0) {
                const std::uint64_t one = 1;
                [[maybe_unused]] const auto n = ::write(impl.blocking_wake_fd_, &one, sizeof one);
            }
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    if (!closed)
        (void)detail::rsocket_ops.shutdown(fd, how);
    std::lock_guard anchor_lock(anchor.mutex);
    if (rpoll_service* service = anchor.service) {
        std::unique_lock lock(service->mutex_);
        if (impl.shutting_down_.fetch_sub(1, std::memory_order_release) == 1) {
            // Waits queued meanwhile go to the poller now.
            service->rpoll_set_dirty_ = true;
            service->on_wait_changed(lock);
        }
    } else {
        impl.shutting_down_.fetch_sub(1, std::memory_order_release);
    }
}

boost::system::error_code rpoll_service::begin_blocking_wait(socket_impl& impl, int& wake_fd) {
    std::lock_guard lock(mutex_);
    if (impl.closed_)
        return boost::asio::error::operation_aborted;
    if (impl.shutting_down_.load(std::memory_order_relaxed) > 0)
        return boost::asio::error::try_again;
    if (impl.blocking_wake_fd_ < 0) {
        impl.blocking_wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (impl.blocking_wake_fd_ < 0)
            return {errno, boost::system::system_category()};
    }
    ++impl.blocking_waiters_;
    wake_fd = impl.blocking_wake_fd_;
    return {};
}

bool rpoll_service::end_blocking_wait(socket_impl& impl) {
    detail::unique_socket socket;
    bool closed = false;
    {
        std::lock_guard lock(mutex_);
        closed = impl.closed_;
        // A shutdown job woke this wait to take the socket out of rpoll;
        // that wake is spent (a close() sets closed_ before it signals).
        if (!closed)
            detail::drain_fd(impl.blocking_wake_fd_);
        if (--impl.blocking_waiters_ == 0 && impl.blocking_close_.is_valid()) {
            // The last waiter hands the descriptor on; the wake is spent, so
            // a reopened socket's next blocking wait sleeps again.
            socket = std::move(impl.blocking_close_);
            detail::drain_fd(impl.blocking_wake_fd_);
        }
    }
    (void)dispose(std::move(socket));
    return !closed;
}

} // namespace corio
