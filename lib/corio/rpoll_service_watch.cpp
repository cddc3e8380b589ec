#include "corio/rpoll_service.hpp"

#include <cerrno>

#include <poll.h>
#include <sys/epoll.h>

#include <corio/detail/rsocket_ops.hpp>

// Watch bookkeeping: where each socket waits for readiness (rpoll set,
// epoll set or the io_context's reactor), kept in step with its wait
// queues, always under the service mutex.

namespace corio {

using detail::op_state;
using detail::rpoll_operation;
using detail::socket_impl;
using detail::wait_kind;

namespace {

constexpr short read_events = POLLIN | POLLERR | POLLHUP | POLLNVAL;
constexpr short write_events = POLLOUT | POLLERR | POLLHUP | POLLNVAL;
constexpr short error_events = POLLPRI | POLLERR | POLLHUP | POLLNVAL;

short events_of(wait_kind kind) noexcept {
    return kind == wait_kind::read ? read_events : kind == wait_kind::write ? write_events : error_events;
}

/// The kinds whose waits want `wanted` (socket_impl::wanted_events: POLLIN,
/// POLLOUT, POLLPRI only), as wait_kind_bit bits. Branch-free: it runs at
/// every wait of an epoll-watched socket that has a mark, which is most of
/// them (a read's event reports the socket writable too).
constexpr std::uint8_t kinds_in(short wanted) noexcept {
    return static_cast<std::uint8_t>(
        (wanted & POLLIN ? detail::wait_kind_bit(wait_kind::read) : 0) |
        (wanted & POLLOUT ? detail::wait_kind_bit(wait_kind::write) : 0) |
        (wanted & POLLPRI ? detail::wait_kind_bit(wait_kind::error) : 0));
}

} // namespace

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
    for (auto kind : {wait_kind::read, wait_kind::write, wait_kind::error}) {
        if (!((revents & events_of(kind)) || (kind == wait_kind::read && retry)))
            continue;
        if (rpoll_operation* op = take_first(impl, kind)) {
            op->reported_ready_ = (revents & events_of(kind)) != 0;
            ready.push_back(op);
        }
    }
}

void rpoll_service::take_epoll_ready(socket_impl& impl, short revents,
                                     std::vector<rpoll_operation*>& ready) {
    for (auto kind : {wait_kind::read, wait_kind::write, wait_kind::error}) {
        if (!(revents & events_of(kind)))
            continue;
        const std::uint8_t bit = detail::wait_kind_bit(kind);
        if (rpoll_operation* op = take_first(impl, kind)) {
            // A wait of the kind ends here: its operation's call comes after
            // this event, so whatever came before is that call's to see.
            impl.epoll_unclaimed_ &= static_cast<std::uint8_t>(~bit);
            op->reported_ready_ = true;
            ready.push_back(op);
        } else {
            // Nothing waits (or the kind's operation is running its call
            // now): the edge is gone, and the next wait must not wait for it.
            impl.epoll_unclaimed_ |= bit;
        }
    }
}

void rpoll_service::queue_changed(socket_impl& impl, detail::wait_queue& queue) {
    queue.sync();
    if (impl.watch_ == socket_impl::watch_via::reactor && !impl.closed_ && !stopping_ &&
        impl.reactor_ && kernel_watch(impl) == socket_impl::watch_via::reactor) {
        // Thread mode on an io_context, the common case: only this queue's
        // kind of wait can need starting or ending.
        if (update_reactor_wait(impl, impl.kind_of(queue)))
            cancel_reactor_waits(impl);
        return;
    }
    update_watch(impl);
}

void rpoll_service::update_watch(socket_impl& impl) {
    const short wanted = impl.closed_ ? 0 : impl.wanted_events();
    if (impl.watch_ == socket_impl::watch_via::none) {
        if (wanted == 0)
            return;
        // Read without io_mutex_, and only here, where wanted != 0 says the
        // socket is open: close() sets closed_ under the service mutex
        // (held here) before it takes the descriptor under io_mutex_, so an
        // open socket's descriptor is stable. (Reading it for a closed
        // socket raced close(), TSan found: close and a finishing connect on
        // two threads.)
        const bool is_rsocket = impl.socket_.ops() == &detail::rsocket_ops;
        impl.watch_ = is_rsocket ? socket_impl::watch_via::rpoll : kernel_watch(impl);
    } else if ((impl.watch_ == socket_impl::watch_via::reactor ||
                impl.watch_ == socket_impl::watch_via::epoll) &&
               wanted != 0 && impl.watch_ != kernel_watch(impl)) {
        // The mode changed since this socket chose: it moves over once
        // nothing of it waits the old way (an epoll wait in flight would
        // otherwise be lost, a reactor wait doubled).
        const bool reactor_busy =
            impl.reactor_waiting_[0] || impl.reactor_waiting_[1] || impl.reactor_waiting_[2];
        if (impl.watch_ == socket_impl::watch_via::reactor ? !reactor_busy
                                                           : !impl.epoll_counted_) {
            if (impl.watch_ == socket_impl::watch_via::epoll)
                disarm_epoll(impl); // or its edges would wake the poller for nothing
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
        // Registered once, edge-triggered: a wait costs no system call, and
        // a wait that ended (completed, cancelled) leaves nothing to undo.
        // POLLOUT is added at the first write wait only: a writable socket
        // would otherwise report every acknowledgement of its data.
        bool needs_arm = !impl.epoll_registered_ ||
                         ((wanted & POLLOUT) && !(impl.epoll_events_ & POLLOUT));
        // A kind that waits while its mark says an edge went unclaimed (an
        // operation whose call said would_block may start waiting after the
        // edge of what arrived since that call was reported with nothing
        // waiting): the registration is made again, and epoll_ctl reports
        // what is ready now, so the wait ends at once if the edge left
        // something, and waits for the next one if not. This is the level
        // check a one-shot registration made on every wait, made only after
        // an unclaimed edge, which a ping-pong never has.
        const std::uint8_t marked = impl.epoll_unclaimed_ & kinds_in(wanted);
        if (marked != 0) {
            impl.epoll_unclaimed_ &= static_cast<std::uint8_t>(~marked);
            needs_arm = true;
        }
        if (wanted != 0 && needs_arm && !arm_epoll(impl, wanted)) {
            // epoll refused the descriptor: rpoll takes any fd.
            impl.epoll_counted_ = false;
            --epoll_waiting_;
            impl.watch_ = socket_impl::watch_via::rpoll;
        }
        if (impl.closed_) {
            // Closing the descriptor takes it out of epoll.
            impl.watch_ = socket_impl::watch_via::none;
            impl.epoll_registered_ = false;
            impl.epoll_events_ = 0;
            impl.epoll_unclaimed_ = 0;
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
    const short events = POLLIN | POLLPRI | ((wanted | impl.epoll_events_) & POLLOUT);
    epoll_event event{};
    event.events = EPOLLET | EPOLLIN | EPOLLPRI | (events & POLLOUT ? EPOLLOUT : 0u);
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
    // ADD and MOD both report what is ready already, so an edge from
    // before the registration (or before POLLOUT joined it) is not lost.
    impl.epoll_registered_ = true;
    impl.epoll_events_ = events;
    return true;
}

void rpoll_service::disarm_epoll(socket_impl& impl) noexcept {
    if (impl.epoll_registered_)
        (void)::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, impl.socket_.get(), nullptr);
    impl.epoll_registered_ = false;
    impl.epoll_events_ = 0;
    impl.epoll_unclaimed_ = 0;
}

} // namespace corio
