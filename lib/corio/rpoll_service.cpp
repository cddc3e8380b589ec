#include "corio/rpoll_service.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <utility>

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/descriptor_base.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/system_error.hpp>

#include <corio/detail/background_closer.hpp>
#include <corio/detail/rsocket_ops.hpp>

namespace corio {

using detail::op_state;
using detail::rpoll_operation;
using detail::socket_impl;
using detail::wait_kind;

boost::asio::execution_context::id rpoll_service::id;

namespace {

void drain(int fd) noexcept {
    std::uint64_t count = 0;
    [[maybe_unused]] const auto n = ::read(fd, &count, sizeof count);
}

constexpr short read_events = POLLIN | POLLERR | POLLHUP | POLLNVAL;
constexpr short write_events = POLLOUT | POLLERR | POLLHUP | POLLNVAL;

} // namespace

rpoll_service::rpoll_service(boost::asio::execution_context& context)
    : rpoll_service(context, nullptr) {}

rpoll_service::rpoll_service(boost::asio::io_context& context)
    : rpoll_service(context, &context) {}

rpoll_service::rpoll_service(boost::asio::execution_context& context,
                             boost::asio::io_context* io_context)
    : boost::asio::execution_context::service(context) {
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    tick_fd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    const auto fail = [this] {
        const boost::system::error_code ec(errno, boost::system::system_category());
        for (const int fd : {wake_fd_, tick_fd_, epoll_fd_})
            if (fd >= 0)
                ::close(fd);
        throw boost::system::system_error(ec, "rpoll_service");
    };
    if (wake_fd_ < 0 || tick_fd_ < 0 || epoll_fd_ < 0)
        fail();
    io_context_ = io_context;
    if (!add_wake_to_epoll())
        fail();
}

rpoll_service::~rpoll_service() {
    shutdown();
    ::close(wake_fd_);
    ::close(tick_fd_);
    ::close(epoll_fd_);
}

void rpoll_service::shutdown() {
    std::unique_lock lock(mutex_);
    stopping_ = true;
    wake_poller(lock);
    std::thread poller = std::move(poller_);
    // Pending async_waits end (or, if the reactor is already shut down, are
    // destroyed with the io_context's queues); the descriptors stay open
    // until their I/O objects close them.
    for (auto& [id, impl] : impls_)
        release_reactor(*impl);
    lock.unlock();
    if (poller.joinable())
        poller.join();

    // Asio requires a service to destroy, not invoke, the handlers it holds
    // at shutdown. Destroying one may destroy a coroutine frame and with it an
    // I/O object that calls back into this service, so collect under the
    // lock and destroy outside it.
    std::vector<rpoll_operation*> pending;
    lock.lock();
    for (auto& [id, impl] : impls_) {
        for (auto* queue : {&impl->reads_, &impl->writes_}) {
            pending.insert(pending.end(), queue->ops.begin(), queue->ops.end());
            queue->ops.clear();
            queue_changed(*impl, *queue);
        }
    }
    auto thread_closes = std::move(deferred_closes_[0]);
    auto busy_closes = std::move(deferred_closes_[1]);
    lock.unlock();
    for (auto* op : pending)
        op->destroy();
    for (auto* closes : {&thread_closes, &busy_closes})
        for (auto& socket : *closes)
            (void)dispose(std::move(socket));

}

void rpoll_service::set_mode(poll_mode mode, const boost::asio::any_io_executor& busy_executor) {
    // Validated before anything changes: a refused switch leaves the mode,
    // the executor and every queued wait as they were.
    if (mode == poll_mode::busy && !busy_executor)
        throw boost::system::system_error(boost::asio::error::invalid_argument,
                                          "corio: busy polling needs an executor");
    std::unique_lock lock(mutex_);
    mode_ = mode;
    busy_executor_ = busy_executor;
    // The waits already queued move to the new mode's poller.
    on_wait_changed(lock);
    wake_poller(lock);
}

poll_mode rpoll_service::mode() const {
    std::lock_guard lock(mutex_);
    return mode_;
}

std::shared_ptr<socket_impl> rpoll_service::create_impl() {
    std::lock_guard lock(mutex_);
    auto impl = std::make_shared<socket_impl>(next_id_++);
    impls_.emplace(impl->id_, impl.get());
    return impl;
}

void rpoll_service::release_impl(socket_impl& impl) noexcept {
    (void)close(impl);
    std::lock_guard lock(mutex_);
    impls_.erase(impl.id_);
}

void rpoll_service::attach(socket_impl& impl, detail::unique_socket socket, transport t,
                           socket_impl::phase phase) {
    {
        std::lock_guard io_lock(impl.io_mutex_);
        impl.socket_ = std::move(socket);
    }
    impl.transport_ = t;
    impl.phase_ = phase;
    std::lock_guard lock(mutex_);
    impl.closed_ = false;
    impl.retry_accept_ = false;
}

bool rpoll_service::may_try_now(socket_impl& impl, wait_kind kind) {
    return impl.queue(kind).idle_now.load(std::memory_order_acquire);
}

void rpoll_service::start_wait(rpoll_operation* op) {
    std::unique_lock lock(mutex_);
    socket_impl& impl = *op->impl_;
    if (impl.closed_ || stopping_) {
        // Closed between the operation's first try and now.
        op->ec_ = boost::asio::error::operation_aborted;
        op->state_.store(op_state::aborted, std::memory_order_release);
        lock.unlock();
        op->post_run();
        return;
    }
    op->state_.store(op_state::queued, std::memory_order_release);
    auto& queue = impl.queue(op->kind_);
    queue.ops.push_back(op);
    queue_changed(impl, queue);
    on_wait_changed(lock);
}

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
        poller_ = std::thread([this] { poller_loop(); });
}

void rpoll_service::post_busy_poll(std::unique_lock<detail::futex_mutex>&) {
    if (busy_posted_ || stopping_)
        return;
    busy_posted_ = true;
    // Re-posted after every busy poll: the io_context's executor itself, when
    // that is what busy_executor_ holds, skips the polymorphic wrapper.
    auto task = [this] { busy_poll(); };
    if (const auto* io_executor =
            busy_executor_.target<boost::asio::io_context::executor_type>())
        boost::asio::post(*io_executor, std::move(task));
    else
        boost::asio::post(busy_executor_, std::move(task));
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
            if (impl->closed_ || impl->in_poll_ != socket_impl::poller::none)
                continue;
            short wanted = 0;
            if (impl->reads_.wants_poll())
                wanted |= POLLIN;
            if (impl->writes_.wants_poll())
                wanted |= POLLOUT;
            if (wanted == 0)
                continue;
            // Read without io_mutex_: the descriptor changes only in attach
            // (before any wait) and close (after closed_ is set, under this
            // lock), so a waiting, open socket's number is stable here.
            fds.push_back({impl->socket_.get(), wanted, 0});
            polled.push_back(impl->id_);
            impl->in_poll_ = self;
            want_tick = want_tick || (impl->retry_accept_ && (wanted & POLLIN));
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
            // rpoll may sleep through a connection on a listening rsocket, so
            // while an accept waits the set includes a ticking timerfd.
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
        if (socket_count == 0) {
            epoll_alone = true;
        } else {
            epoll_index = fds.size();
            fds.push_back({epoll_fd_, POLLIN, 0});
        }
    }

    lock.unlock();
    boost::system::error_code ec;
    int event_count = 0;
    const int epoll_timeout = with_wake_fds ? -1 : 0;
    if (epoll_alone) {
        event_count = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()),
                                   epoll_timeout);
    } else {
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
            drain(wake_fd_);
        wake_pending_ = false;
        if (tick_index != absent && (fds[tick_index].revents & POLLIN)) {
            drain(tick_fd_);
            retry_due = true;
        }
    }

    for (std::size_t i = 0; i < socket_count; ++i) {
        const auto found = impls_.find(polled[i]);
        if (found == impls_.end())
            continue;
        socket_impl* impl = found->second;
        impl->in_poll_ = socket_impl::poller::none;
        // A socket closed during the rpoll: its waits were aborted already.
        if (impl->closed_)
            continue;
        const short revents = ec ? 0 : fds[i].revents;
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
                drain(wake_fd_);
            continue;
        }
        const auto found = impls_.find(id);
        if (found == impls_.end())
            continue;
        socket_impl* impl = found->second;
        if (impl->closed_ || impl->watch_ != socket_impl::watch_via::epoll)
            continue;
        // EPOLLONESHOT: the kernel disarmed the descriptor when it reported
        // it; take_ready re-arms it for whatever still waits.
        impl->epoll_armed_ = 0;
        take_ready(*impl, static_cast<short>(events[i].events), false, ready);
        update_watch(*impl);
    }
}

bool rpoll_service::add_wake_to_epoll() noexcept {
    epoll_event wake{};
    wake.events = EPOLLIN;
    wake.data.u64 = wake_id;
    return ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &wake) == 0;
}

void rpoll_service::release_reactor(socket_impl& impl) noexcept {
    if (!impl.reactor_)
        return;
    // release(), not close(): the descriptor is socket_'s to close.
    (void)impl.reactor_->release();
    impl.reactor_.reset();
}

void rpoll_service::update_reactor_waits(socket_impl& impl) {
    if (impl.closed_ || stopping_) {
        // Before the descriptor is closed (close() disposes of it after
        // this), so the reactor never holds a number that may be reused.
        release_reactor(impl);
        return;
    }
    if (!impl.reactor_) {
        try {
            // Registers the descriptor once (edge-triggered, as for Asio's
            // own sockets); each async_wait below re-arms it with one
            // epoll_ctl, which also reports readiness that came before it.
            impl.reactor_.emplace(io_context_->get_executor(), impl.socket_.get());
        } catch (const boost::system::system_error&) {
            impl.reactor_.reset();
            impl.reactor_refused_ = true;
            impl.watch_ = socket_impl::watch_via::none;
            update_watch(impl);
            return;
        }
    }
    const bool cancel_read = update_reactor_wait(impl, wait_kind::read);
    if (update_reactor_wait(impl, wait_kind::write) || cancel_read)
        cancel_reactor_waits(impl);
}

void rpoll_service::cancel_reactor_waits(socket_impl& impl) {
    // Ends both kinds' waits; the other kind's handler starts its wait again
    // if it is still wanted.
    boost::system::error_code ignored;
    impl.reactor_->cancel(ignored);
}

bool rpoll_service::update_reactor_wait(socket_impl& impl, wait_kind kind) {
    const auto& queue = impl.queue(kind);
    bool& waiting = impl.reactor_waiting_[static_cast<int>(kind)];
    if (queue.wants_poll()) {
        if (!waiting) {
            waiting = true;
            impl.reactor_->async_wait(
                kind == wait_kind::read ? boost::asio::posix::descriptor_base::wait_read
                                        : boost::asio::posix::descriptor_base::wait_write,
                [this, self = impl.shared_from_this(), kind](const boost::system::error_code& ec) {
                    on_reactor_wait(*self, kind, ec);
                });
        }
        return false;
    }
    // The operation it was for was cancelled or aborted: a wait left pending
    // would keep io_context::run() from returning.
    return waiting && queue.idle();
}

void rpoll_service::on_reactor_wait(socket_impl& impl, wait_kind kind,
                                    const boost::system::error_code& ec) {
    rpoll_operation* op = nullptr;
    {
        std::lock_guard lock(mutex_);
        impl.reactor_waiting_[static_cast<int>(kind)] = false;
        if (impl.closed_ || stopping_)
            return;
        if (!ec || ec != boost::asio::error::operation_aborted) {
            // Another error (the reactor refused the descriptor) also runs
            // the operation: its own call reports what is wrong, and the
            // socket's next wait goes to epoll.
            if (ec)
                impl.reactor_refused_ = true;
            op = take_first(impl, kind);
        }
        // Waits again for whatever still waits (take_first did, if it took
        // one): the next operation after a cancelled one, or a wait
        // cancelled together with its sibling.
        if (!op)
            update_watch(impl);
    }
    // As the reactor runs Asio's own operations: on the io_context's thread,
    // without another post when the handler's executor is this io_context.
    if (op)
        op->dispatch_run();
}

rpoll_operation* rpoll_service::take_first(socket_impl& impl, wait_kind kind) {
    auto& queue = impl.queue(kind);
    if (!queue.wants_poll())
        return nullptr;
    rpoll_operation* op = queue.ops.front();
    queue.ops.pop_front();
    // queued -> scheduled: under the lock, so no canceller can be removing
    // it from the queue at the same time.
    op->state_.store(op_state::scheduled, std::memory_order_release);
    queue.running = op;
    queue_changed(impl, queue);
    return op;
}

void rpoll_service::take_ready(socket_impl& impl, short revents, bool retry,
                               std::vector<rpoll_operation*>& ready) {
    for (auto kind : {wait_kind::read, wait_kind::write}) {
        const short events = kind == wait_kind::read ? read_events : write_events;
        if (!((revents & events) || (kind == wait_kind::read && retry)))
            continue;
        if (rpoll_operation* op = take_first(impl, kind))
            ready.push_back(op);
    }
}

bool rpoll_service::any_waiting() const noexcept {
    return !watched_.empty() || epoll_waiting_ > 0;
}

void rpoll_service::queue_changed(socket_impl& impl, detail::wait_queue& queue) {
    queue.sync();
    if (impl.watch_ == socket_impl::watch_via::reactor && !impl.closed_ && !stopping_ &&
        impl.reactor_ && kernel_watch(impl) == socket_impl::watch_via::reactor) {
        // Thread mode on an io_context, the common case: only this queue's
        // kind of wait can need starting or ending.
        if (update_reactor_wait(impl, &queue == &impl.reads_ ? wait_kind::read : wait_kind::write))
            cancel_reactor_waits(impl);
        return;
    }
    update_watch(impl);
}

void rpoll_service::update_watch(socket_impl& impl) {
    short wanted = 0;
    if (!impl.closed_) {
        if (impl.reads_.wants_poll())
            wanted |= POLLIN;
        if (impl.writes_.wants_poll())
            wanted |= POLLOUT;
    }
    const bool is_rsocket = impl.socket_.ops() == &detail::rsocket_ops;
    if (impl.watch_ == socket_impl::watch_via::none) {
        if (wanted == 0)
            return;
        // Read without io_mutex_: see poll_once.
        impl.watch_ = is_rsocket ? socket_impl::watch_via::rpoll : kernel_watch(impl);
    } else if ((impl.watch_ == socket_impl::watch_via::reactor ||
                impl.watch_ == socket_impl::watch_via::epoll) &&
               wanted != 0 && impl.watch_ != kernel_watch(impl)) {
        // The mode changed since this socket chose: it moves over once
        // nothing of it waits the old way (an epoll wait in flight would
        // otherwise be lost, a reactor wait doubled).
        const bool reactor_busy = impl.reactor_waiting_[0] || impl.reactor_waiting_[1];
        if (impl.watch_ == socket_impl::watch_via::reactor ? !reactor_busy
                                                           : !impl.epoll_counted_) {
            if (impl.watch_ == socket_impl::watch_via::epoll)
                impl.epoll_armed_ = 0; // a one-shot left armed fires unclaimed
            else
                release_reactor(impl);
            impl.watch_ = kernel_watch(impl);
        }
    }
    if (impl.watch_ == socket_impl::watch_via::reactor) {
        update_reactor_waits(impl);
        if (impl.closed_)
            impl.watch_ = socket_impl::watch_via::none;
        return;
    }
    if (impl.watch_ == socket_impl::watch_via::epoll) {
        if ((wanted != 0) != impl.epoll_counted_) {
            impl.epoll_counted_ = wanted != 0;
            epoll_waiting_ += wanted != 0 ? 1 : -1;
        }
        // Armed lazily: a wait that ended (completed, cancelled) leaves the
        // descriptor armed, which costs at most one event that finds nothing
        // to do, instead of a system call now.
        if (wanted != 0 && wanted != impl.epoll_armed_ && !arm_epoll(impl, wanted)) {
            // epoll refused the descriptor: rpoll takes any fd.
            impl.epoll_counted_ = false;
            --epoll_waiting_;
            impl.watch_ = socket_impl::watch_via::rpoll;
        }
        if (impl.closed_) {
            // Closing the descriptor takes it out of epoll.
            impl.watch_ = socket_impl::watch_via::none;
            impl.epoll_registered_ = false;
            impl.epoll_armed_ = 0;
        }
        if (impl.watch_ == socket_impl::watch_via::epoll ||
            impl.watch_ == socket_impl::watch_via::none)
            return;
    }
    // rpoll: the poller thread must rebuild its set.
    rpoll_set_dirty_ = true;
    const bool watched = impl.watch_index_ != socket_impl::not_watched;
    if (wanted != 0 && !watched) {
        impl.watch_index_ = watched_.size();
        watched_.push_back(&impl);
    } else if (wanted == 0 && watched) {
        // Swap-remove: order in the poll set does not matter.
        socket_impl* last = watched_.back();
        watched_[impl.watch_index_] = last;
        last->watch_index_ = impl.watch_index_;
        watched_.pop_back();
        impl.watch_index_ = socket_impl::not_watched;
    }
    if (impl.closed_)
        impl.watch_ = socket_impl::watch_via::none;
}

bool rpoll_service::arm_epoll(socket_impl& impl, short wanted) {
    epoll_event event{};
    event.events = EPOLLONESHOT | (wanted & POLLIN ? EPOLLIN : 0u) |
                   (wanted & POLLOUT ? EPOLLOUT : 0u);
    event.data.u64 = impl.id_;
    const int fd = impl.socket_.get();
    int op = impl.epoll_registered_ ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    if (::epoll_ctl(epoll_fd_, op, fd, &event) != 0) {
        // Our record and the kernel's disagree (a descriptor closed and its
        // number reused): try the other way once.
        if (errno != ENOENT && errno != EEXIST)
            return false;
        op = op == EPOLL_CTL_MOD ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
        if (::epoll_ctl(epoll_fd_, op, fd, &event) != 0)
            return false;
    }
    impl.epoll_registered_ = true;
    impl.epoll_armed_ = wanted;
    return true;
}

void rpoll_service::finish_running(rpoll_operation* op) {
    std::unique_lock lock(mutex_);
    auto& queue = op->impl_->queue(op->kind_);
    if (queue.running == op)
        queue.running = nullptr;
    queue_changed(*op->impl_, queue);
    // The next operation of this kind may now be polled for.
    if (queue.wants_poll())
        on_wait_changed(lock);
}

void rpoll_service::forget_operation(rpoll_operation* op) noexcept {
    std::lock_guard lock(mutex_);
    auto& queue = op->impl_->queue(op->kind_);
    if (queue.running == op)
        queue.running = nullptr;
    queue_changed(*op->impl_, queue);
}

void rpoll_service::run_operation(rpoll_operation* op) {
    op_state state = op->state_.load(std::memory_order_acquire);
    if (state == op_state::scheduled) {
        bool finished = true;
        socket_impl& impl = *op->impl_;
        {
            std::lock_guard io_lock(impl.io_mutex_);
            if (!impl.socket_.is_valid()) {
                // close() won the race for the socket before we could call.
                op->ec_ = boost::asio::error::operation_aborted;
            } else if (op->state_.load(std::memory_order_acquire) == op_state::cancel_requested) {
                op->ec_ = boost::asio::error::operation_aborted;
            } else {
                finished = op->perform(impl);
            }
        }
        if (!finished) {
            std::unique_lock lock(mutex_);
            auto& queue = impl.queue(op->kind_);
            // scheduled -> queued: wait again, at the front so that later
            // operations of this kind stay behind it. A canceller may have
            // moved it to cancel_requested meanwhile; then the exchange
            // fails and the operation ends with operation_aborted.
            state = op_state::scheduled;
            if (!impl.closed_ &&
                op->state_.compare_exchange_strong(state, op_state::queued,
                                                   std::memory_order_acq_rel)) {
                queue.running = nullptr;
                queue.ops.push_front(op);
                queue_changed(impl, queue);
                on_wait_changed(lock);
                return;
            }
            op->ec_ = boost::asio::error::operation_aborted;
        }
        // scheduled or cancel_requested -> finished: the call's own result
        // stands even if cancellation arrived during it, so bytes already
        // moved are reported, never dropped.
        op->state_.store(op_state::finished, std::memory_order_release);
        finish_running(op);
    } else if (state == op_state::cancel_requested) {
        op->ec_ = boost::asio::error::operation_aborted;
        op->state_.store(op_state::finished, std::memory_order_release);
        finish_running(op);
    }
    // aborted or finished: whoever set that state also settled the queue.
    op->complete();
}

void rpoll_service::cancel_operation(rpoll_operation* op) {
    std::unique_lock lock(mutex_);
    op_state state = op->state_.load(std::memory_order_acquire);
    if (state == op_state::queued) {
        auto& queue = op->impl_->queue(op->kind_);
        const auto it = std::find(queue.ops.begin(), queue.ops.end(), op);
        if (it == queue.ops.end())
            return;
        queue.ops.erase(it);
        queue_changed(*op->impl_, queue);
        // queued -> aborted, under the lock the poller also needs to take it.
        op->ec_ = boost::asio::error::operation_aborted;
        op->state_.store(op_state::aborted, std::memory_order_release);
        lock.unlock();
        op->post_run();
    } else if (state == op_state::scheduled) {
        // scheduled -> cancel_requested. The run's own move back to queued
        // happens under the service mutex, which this holds, so the exchange
        // can only lose to finished (the run completed: nothing to cancel)
        // or to another canceller; neither leaves anything to do, and the
        // operation is not touched again once the lock is released (it may
        // be freed by then).
        op->state_.compare_exchange_strong(state, op_state::cancel_requested,
                                           std::memory_order_acq_rel);
    }
}

void rpoll_service::abort_queued(socket_impl& impl, std::vector<rpoll_operation*>& aborted) {
    for (auto* queue : {&impl.reads_, &impl.writes_}) {
        for (auto* op : queue->ops) {
            op->ec_ = boost::asio::error::operation_aborted;
            op->state_.store(op_state::aborted, std::memory_order_release);
            aborted.push_back(op);
        }
        queue->ops.clear();
        queue_changed(impl, *queue);
        if (queue->running) {
            op_state expected = op_state::scheduled;
            queue->running->state_.compare_exchange_strong(expected, op_state::cancel_requested,
                                                           std::memory_order_acq_rel);
        }
    }
}

void rpoll_service::cancel_all(socket_impl& impl) {
    std::vector<rpoll_operation*> aborted;
    {
        std::lock_guard lock(mutex_);
        abort_queued(impl, aborted);
    }
    for (auto* op : aborted)
        op->post_run();
}

boost::system::error_code rpoll_service::close(socket_impl& impl) {
    std::vector<rpoll_operation*> aborted;
    {
        std::lock_guard lock(mutex_);
        abort_queued(impl, aborted);
        impl.closed_ = true;
        impl.retry_accept_ = false;
        update_watch(impl);
    }
    for (auto* op : aborted)
        op->post_run();

    detail::unique_socket socket;
    {
        // Waits for a run in the middle of its call on this socket.
        std::lock_guard io_lock(impl.io_mutex_);
        // Every riomap region goes now, not with the background rclose:
        // once close() returns the application may free that memory, and a
        // peer's riowrite must not reach it. riounmap deregisters the
        // memory and waits for nothing.
        for (const auto& [address, length] : impl.local_regions_)
            (void)impl.socket_.ops()->iounmap(impl.socket_.get(), address, length);
        impl.local_regions_.clear();
        socket = std::move(impl.socket_);
    }
    impl.phase_ = socket_impl::phase::closed;
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
    // The socket's own lock is not held: a run of this socket's operations
    // on the io_context must go on, since it may be what lets rshutdown
    // finish. rsockets lock their own state. A close() after this shutdown
    // queues behind it, so the descriptor is still this socket's when the
    // job runs.
    return detail::run_in_background(fd,
                                     [fd, how] { (void)detail::rsocket_ops.shutdown(fd, how); });
}

boost::system::error_code rpoll_service::begin_blocking_wait(socket_impl& impl, int& wake_fd) {
    std::lock_guard lock(mutex_);
    if (impl.closed_)
        return boost::asio::error::operation_aborted;
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
        if (--impl.blocking_waiters_ == 0 && impl.blocking_close_.is_valid()) {
            // The last waiter hands the descriptor on; the wake is spent, so
            // a reopened socket's next blocking wait sleeps again.
            socket = std::move(impl.blocking_close_);
            drain(impl.blocking_wake_fd_);
        }
    }
    (void)dispose(std::move(socket));
    return !closed;
}

void rpoll_service::set_retry_accept(socket_impl& impl, bool on) {
    std::lock_guard lock(mutex_);
    impl.retry_accept_ = on;
}

} // namespace corio
