#include "corio/rpoll_service.hpp"

#include <chrono>
#include <cstdint>
#include <utility>

#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <corio/detail/drain_fd.hpp>
#include <corio/detail/rsocket_ops.hpp>

// The poll loop and its two back-ends: the poller thread, which blocks in
// rpoll, or in epoll_wait, with the wake eventfd and the accept tick in its set,
// and the busy task, which polls with timeout 0 on the io_context and re-posts
// itself. Races resolved here: a poller asleep while the set changes
// (wake_poller and poller_in_rpoll_), and a socket closed while its
// descriptor is in an rpoll under way (in_poll_ and deferred_closes_).

namespace corio {

using detail::rpoll_operation;
using detail::socket_impl;

void rpoll_service::on_wait_changed(std::unique_lock<detail::futex_mutex>& lock) {
    if (stopping_)
        return;
    if (mode_ == poll_mode::busy) {
        post_busy_poll(lock);
    } else {
        // Kernel sockets waiting in the io_context's reactor need no poller
        // thread; rsockets and epoll waits (off an io_context, or armed in
        // busy mode before a switch) do.
        if (!watched_.empty() || epoll_waiting_ > 0)
            ensure_poller_started(lock);
        // A kernel socket armed in epoll reaches a poller already asleep
        // there (or in rpoll, through epoll_fd_): only a changed rpoll set
        // needs the wake, and the hand-off it costs.
        if (rpoll_set_dirty_)
            wake_poller(lock);
    }
}

void rpoll_service::wake_poller(std::unique_lock<detail::futex_mutex>&) {
    // Only a poller asleep in rpoll needs the eventfd; one that is not will
    // rebuild its set before it sleeps again.
    if (poller_in_rpoll_ && !wake_pending_) {
        wake_pending_ = true;
        const std::uint64_t one = 1;
        [[maybe_unused]] const auto n = ::write(wake_fd_, &one, sizeof one);
    }
}

void rpoll_service::ensure_poller_started(std::unique_lock<detail::futex_mutex>&) {
    if (!poller_.joinable() && !stopping_)
        poller_ = std::thread([this] {
            pthread_setname_np(pthread_self(), "corio-poller"); // as the closer's
            poller_loop();
        });
}

void rpoll_service::post_busy_poll(std::unique_lock<detail::futex_mutex>&) {
    if (busy_posted_ || stopping_)
        return;
    busy_posted_ = true;
    // Re-posted after every busy poll. This service's own io_context takes
    // busy_task_ itself, as a continuation: posted from a thread running that
    // io_context (every re-post), it goes to the thread's private queue,
    // without the scheduler's mutex. Another io_context's executor is posted
    // to without the polymorphic wrapper.
    if (busy_scheduler_) {
        busy_scheduler_->post_immediate_completion(&busy_task_, true);
        return;
    }
    auto task = [this] { busy_poll(); };
    if (const auto* io_executor = busy_executor_.target<boost::asio::io_context::executor_type>())
        boost::asio::post(*io_executor, std::move(task));
    else
        boost::asio::post(busy_executor_, std::move(task));
}

void rpoll_service::busy_task::run(void* owner, scheduler_operation* base,
                                   const boost::system::error_code&, std::size_t) {
    if (owner)
        static_cast<busy_task*>(base)->service_.busy_poll();
}

void rpoll_service::poller_loop() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        poll_once(lock, socket_impl::poller::thread);
    }
}

void rpoll_service::busy_poll() {
    std::unique_lock lock(mutex_);
    // busy_posted_ stays set while this task runs, also while poll_once has
    // the lock released: a second busy task beside it (an io_context run by
    // several threads) would share scratch_[1]. It is cleared as this one
    // ends, which posts the next while anything waits.
    const auto next = [this, &lock] {
        if (!lock.owns_lock())
            lock.lock();
        busy_posted_ = false;
        // Keep spinning only while something waits; start_wait posts again.
        if (mode_ == poll_mode::busy && any_waiting())
            post_busy_poll(lock);
    };
    if (mode_ != poll_mode::busy || stopping_) {
        busy_posted_ = false;
        return;
    }
    try {
        // One poll per turn. Repeating polls that find nothing here would
        // save the reactor's epoll_wait of a turn, but it delays whatever
        // handlers are queued behind this task (an operation that finished
        // at once posts its completion), which this task cannot see: 16
        // polls per turn made a tcp ping-pong beside 16 idle streams twice
        // as slow (doc/performance.md, session 12).
        poll_once(lock, socket_impl::poller::busy);
    } catch (...) {
        next();
        throw;
    }
    next();
}

void rpoll_service::poll_once(std::unique_lock<detail::futex_mutex>& lock, socket_impl::poller self) {
    // The poller thread blocks and has the wake and tick fds in its set; the
    // busy task never blocks and keeps time with the clock instead.
    const bool with_wake_fds = self == socket_impl::poller::thread;
    const auto timeout =
        with_wake_fds ? detail::poll_timeout::infinite : detail::poll_timeout::immediate;
    auto& deferred_closes = deferred_closes_[with_wake_fds ? 0 : 1];
    // Kept between calls, so that a poll allocates nothing once warm. Only
    // this poller touches its scratch, also while the lock is released.
    auto& scratch = scratch_[with_wake_fds ? 0 : 1];
    auto& fds = scratch.fds;
    // Ids, not pointers: an I/O object destroyed during the poll takes its
    // state out of impls_, and the lookup afterwards then finds nothing.
    auto& polled = scratch.polled;
    auto& ready = scratch.ready;
    auto& events = scratch.events;
    fds.clear();
    polled.clear();
    ready.clear();
    bool retry_due = false;

    // In busy mode the poller thread sleeps on its eventfd alone: sockets are
    // polled by the busy task, and two polls must never share a socket.
    const bool poll_sockets = with_wake_fds == (mode_ == poll_mode::thread);
    bool want_tick = false;
    if (poll_sockets) {
        // Only rsockets with a wait are in watched_ (kernel sockets wait in
        // epoll_fd_): the set costs O(waiting rsockets) to build, not
        // O(every socket of the context).
        for (socket_impl* impl : watched_) {
            if (impl->closed_ || impl->in_poll_ != socket_impl::poller::none ||
                impl->shutting_down_.load(std::memory_order_relaxed) > 0)
                continue;
            const short wanted = impl->wanted_events();
            if (wanted == 0)
                continue;
            // Read without io_mutex_: the descriptor changes only in attach
            // (before any wait) and close (after closed_ is set, under this
            // lock), so a waiting, open socket's number is stable here.
            fds.push_back({impl->socket_.get(), wanted, 0});
            polled.push_back(impl->id_);
            impl->in_poll_ = self;
            want_tick = want_tick || (impl->retry_accept_ && (wanted & POLLIN)) ||
                        (impl->retry_connect_ && (wanted & POLLOUT));
        }
        if (with_wake_fds)
            rpoll_set_dirty_ = false;
    }
    const std::size_t socket_count = fds.size();
    // Kernel sockets (and the wake fd) wait in epoll_fd_. With no rsocket to
    // poll, epoll_wait alone; otherwise epoll_fd_ joins the rpoll set, and
    // is read without blocking once rpoll says it is ready.
    bool epoll_alone = false;
    constexpr std::size_t absent = static_cast<std::size_t>(-1);
    std::size_t epoll_index = absent;
    std::size_t wake_index = absent;
    std::size_t tick_index = absent;
    if (with_wake_fds) {
        if (want_tick != tick_armed_) {
            // rpoll may sleep through a connection on a listening rsocket, and
            // nothing wakes a deferred connect, so while such an accept or
            // connect waits the set includes a ticking timerfd.
            itimerspec spec{};
            if (want_tick) {
                const auto ns = std::chrono::nanoseconds(accept_retry_interval).count();
                spec.it_interval.tv_nsec = spec.it_value.tv_nsec = ns;
            }
            ::timerfd_settime(tick_fd_, 0, &spec, nullptr);
            tick_armed_ = want_tick;
        }
        // epoll_fd_ (which holds the wake fd) is this thread's to wait on
        // unless the busy task polls sockets.
        const bool with_epoll = poll_sockets;
        if (with_epoll && socket_count == 0 && !tick_armed_) {
            epoll_alone = true;
        } else {
            if (with_epoll) {
                epoll_index = fds.size();
                fds.push_back({epoll_fd_, POLLIN, 0});
            } else {
                wake_index = fds.size();
                fds.push_back({wake_fd_, POLLIN, 0});
            }
            if (poll_sockets && tick_armed_) {
                tick_index = fds.size();
                fds.push_back({tick_fd_, POLLIN, 0});
            }
        }
        poller_in_rpoll_ = true;
    } else {
        if (want_tick) {
            const auto now = std::chrono::steady_clock::now();
            if (now - last_busy_tick_ >= accept_retry_interval) {
                last_busy_tick_ = now;
                retry_due = true;
            }
        }
        // epoll_fd_ only while a kernel socket waits in it (its wake fd is
        // the poller thread's): rpoll makes a poll system call for every
        // kernel fd in its set on every call, which an rsocket-only busy
        // turn would otherwise pay for nothing.
        if (epoll_waiting_ > 0) {
            if (socket_count == 0) {
                epoll_alone = true;
            } else {
                epoll_index = fds.size();
                fds.push_back({epoll_fd_, POLLIN, 0});
            }
        }
    }

    lock.unlock();
    boost::system::error_code ec;
    int event_count = 0;
    const int epoll_timeout = with_wake_fds ? -1 : 0;
    if (epoll_alone) {
        event_count = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()),
                                   epoll_timeout);
    } else if (!fds.empty()) {
        detail::rsocket_ops.poll(fds.data(), fds.size(), timeout, ec);
        if (epoll_index != absent && !ec && (fds[epoll_index].revents & POLLIN))
            event_count =
                ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), 0);
    }
    lock.lock();
    // The poller thread's flag only: the busy task clearing it would leave a
    // poller thread asleep on its wake fd that no wake_poller can reach (a
    // switch to busy mode, then shutdown, hung in join).
    if (with_wake_fds)
        poller_in_rpoll_ = false;

    if (with_wake_fds) {
        if (wake_index != absent && (fds[wake_index].revents & POLLIN))
            detail::drain_fd(wake_fd_);
        wake_pending_ = false;
        if (tick_index != absent && (fds[tick_index].revents & POLLIN)) {
            detail::drain_fd(tick_fd_);
            retry_due = true;
        }
    }
    // A busy turn over kernel sockets alone that found nothing (the common
    // turn beside idle streams) has nothing to take, close or run.
    if (socket_count == 0 && event_count == 0 && deferred_closes.empty())
        return;

    for (std::size_t i = 0; i < socket_count; ++i) {
        const auto found = impls_.find(polled[i]);
        if (found == impls_.end())
            continue;
        socket_impl* impl = found->second;
        impl->in_poll_ = socket_impl::poller::none;
        // A socket closed during the rpoll: its waits were aborted already.
        if (impl->closed_)
            continue;
        short revents = ec ? 0 : fds[i].revents;
        // A deferred connect is tried again on the tick as if writable.
        if (retry_due && impl->retry_connect_)
            revents |= POLLOUT;
        take_ready(*impl, revents, retry_due && impl->retry_accept_, ready);
    }
    take_epoll_events(events.data(), event_count, with_wake_fds, ready);
    auto closes = std::move(deferred_closes);
    deferred_closes.clear();

    lock.unlock();
    for (auto& socket : closes)
        (void)dispose(std::move(socket));
    // The busy task runs on the io_context, so an operation whose handler
    // runs there too is run here, as Asio's scheduler runs what its reactor
    // found ready, instead of costing another post. The poller thread always
    // posts.
    run_ready(ready);
    lock.lock();
}

void rpoll_service::run_ready(const std::vector<detail::rpoll_operation*>& ready) {
    // A handler run here may throw: the rest are posted, not lost, and the
    // caller keeps going while anything waits.
    std::size_t next = 0;
    try {
        while (next < ready.size())
            ready[next++]->dispatch_run();
    } catch (...) {
        for (; next < ready.size(); ++next)
            ready[next]->post_run();
        throw;
    }
}

void rpoll_service::take_epoll_events(const epoll_event* events, int count, bool drain_wake,
                                      std::vector<rpoll_operation*>& ready) {
    for (int i = 0; i < count; ++i) {
        const std::uint64_t id = events[i].data.u64;
        if (id == wake_id) {
            // Only the poller thread drains: the busy task leaves the wake to
            // it, or the thread would miss the wake it is waiting for.
            if (drain_wake)
                detail::drain_fd(wake_fd_);
            continue;
        }
        const auto found = impls_.find(id);
        if (found == impls_.end())
            continue;
        socket_impl* impl = found->second;
        if (impl->closed_ || impl->watch_ != socket_impl::watch_via::epoll)
            continue;
        take_epoll_ready(*impl, static_cast<short>(events[i].events), ready);
    }
}

bool rpoll_service::add_wake_to_epoll() noexcept {
    epoll_event wake{};
    wake.events = EPOLLIN;
    wake.data.u64 = wake_id;
    return ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &wake) == 0;
}

} // namespace corio
