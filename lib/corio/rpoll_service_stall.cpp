#include "corio/rpoll_service.hpp"

#include <memory>
#include <vector>

#include <boost/asio/error.hpp>

// Stall timeouts (corio::stall_timeout): which socket the watcher thread
// holds, when its clock restarts, and the trip that ends its operations.
// The watcher calls check_stall without any lock; everything here that
// reads or changes a socket's queues or its watch's armed_ holds the service
// mutex, and the watcher's own mutex is only ever taken inside it.

namespace corio {

using detail::rpoll_operation;
using detail::socket_impl;
using detail::stall_watch;
using clock = std::chrono::steady_clock;

namespace {

bool nothing_pending(const socket_impl& impl) noexcept {
    return impl.reads_.idle() && impl.writes_.idle();
}

} // namespace

boost::system::error_code rpoll_service::set_stall_timeout(socket_impl& impl,
                                                           std::chrono::nanoseconds timeout) {
    if (timeout.count() < 0)
        return boost::asio::error::invalid_argument;
    if (impl.phase_ == socket_impl::phase::closed)
        return boost::asio::error::bad_descriptor;
    if (impl.phase_ != socket_impl::phase::connected)
        return boost::asio::error::not_connected;
    std::lock_guard lock(mutex_);
    if (stopping_)
        return boost::asio::error::shut_down;
    if (!impl.stall_owner_) {
        impl.stall_owner_ = std::make_unique<stall_watch>();
        impl.stall_.store(impl.stall_owner_.get(), std::memory_order_release);
    }
    stall_watch& stall = *impl.stall_owner_;
    stall.set_timeout(timeout);
    // Operations already pending are watched from now on.
    if (timeout.count() > 0 && !stall.armed_ && !nothing_pending(impl) && !stall.tripped()) {
        stall.restart(clock::now());
        (void)stall_wait_begins(impl, stall);
    }
    return {};
}

bool rpoll_service::stall_wait_begins(socket_impl& impl, stall_watch& stall) {
    if (stall.tripped())
        return false;
    const auto now = clock::now();
    // Time spent with nothing pending is no stall: the clock starts anew.
    if (nothing_pending(impl))
        stall.restart(now);
    const auto timeout = stall.timeout();
    if (timeout.count() == 0 || stall.armed_)
        return true;
    if (!stall_watcher_)
        stall_watcher_ = std::make_unique<detail::stall_watcher>(
            [this](socket_impl& watched) { return check_stall(watched); });
    stall.armed_ = true;
    stall_watcher_->watch(impl.weak_from_this(),
                          stall.last_progress() + std::chrono::duration_cast<clock::duration>(timeout));
    return true;
}

std::optional<clock::time_point> rpoll_service::check_stall(socket_impl& impl) {
    std::vector<rpoll_operation*> ended;
    {
        std::lock_guard lock(mutex_);
        stall_watch* stall = impl.stall_.load(std::memory_order_acquire);
        if (stall == nullptr)
            return std::nullopt;
        const auto timeout = std::chrono::duration_cast<clock::duration>(stall->timeout());
        if (impl.closed_ || stopping_ || timeout.count() == 0 || stall->tripped() ||
            nothing_pending(impl)) {
            // The next wait hands the socket back (stall_wait_begins).
            stall->armed_ = false;
            return std::nullopt;
        }
        const auto deadline = stall->last_progress() + timeout;
        if (clock::now() < deadline)
            return deadline;
        // Stalled: queued operations end with timed_out here (abort_queued
        // reads the tripped watch); a running one is asked to stop and ends
        // with timed_out in run_operation, unless its call moved bytes.
        stall->trip();
        stall->armed_ = false;
        abort_queued(impl, ended);
    }
    for (auto* op : ended)
        op->post_run();
    return std::nullopt;
}

void rpoll_service::stop_stall_watcher() noexcept {
    std::unique_ptr<detail::stall_watcher> watcher;
    {
        std::lock_guard lock(mutex_);
        watcher = std::move(stall_watcher_);
    }
    // Joined without the service mutex, which its check takes.
    watcher.reset();
}

} // namespace corio
