#include "corio/rpoll_service.hpp"

#include <algorithm>

#include <boost/asio/error.hpp>

// The operation state machine (detail::op_state): queued, scheduled,
// cancel_requested, aborted, finished. Moves out of queued happen under the
// service mutex; moves out of scheduled race between the executor running the
// operation and a canceller on another thread, settled by compare-exchange,
// one comment per transition.

namespace corio {

using detail::op_state;
using detail::rpoll_operation;
using detail::socket_impl;

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
    if (auto* stall = impl.stall_.load(std::memory_order_relaxed)) [[unlikely]] {
        if (!stall_wait_begins(impl, *stall)) {
            // The socket stalled: like a reset, no new waits.
            op->ec_ = boost::asio::error::timed_out;
            op->state_.store(op_state::aborted, std::memory_order_release);
            lock.unlock();
            op->post_run();
            return;
        }
    }
    op->state_.store(op_state::queued, std::memory_order_release);
    auto& queue = impl.queue(op->kind_);
    queue.ops.push_back(op);
    queue_changed(impl, queue);
    on_wait_changed(lock);
}

void rpoll_service::finish_running(rpoll_operation* op) {
    std::unique_lock lock(mutex_);
    socket_impl& impl = *op->impl_;
    auto& queue = impl.queue(op->kind_);
    if (queue.running == op)
        queue.running = nullptr;
    // The next operation of this kind may now be polled for. Where the
    // socket waits edge-triggered it has made no call since the edge that
    // ran this one, which may have left something for it (a read that took
    // part of the data, a second connection in the backlog) with no edge to
    // come: in the service's epoll set it waits as if that edge were
    // unclaimed (update_watch re-arms, which reports what is ready now); on
    // the io_context's reactor it makes its call first.
    if (impl.watch_ == socket_impl::watch_via::epoll && !queue.ops.empty())
        impl.epoll_unclaimed_ |= detail::wait_kind_bit(op->kind_);
    queue_changed(impl, queue);
    if (!queue.wants_poll())
        return;
    rpoll_operation* next = nullptr;
    if (impl.watch_ == socket_impl::watch_via::reactor) {
        next = take_first(impl, op->kind_);
        next->reported_ready_ = false;
    }
    on_wait_changed(lock);
    lock.unlock();
    if (next)
        next->post_run();
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
                op->ec_ = detail::stall_watch::cancelled_error(impl.stall_.load());
            } else if (impl.shutting_down_.load(std::memory_order_acquire) > 0) {
                // An rshutdown is under way: wait again; the shutdown job
                // brings the socket back into the poll set when it returns.
                finished = false;
            } else {
                finished = op->perform(impl);
                if (finished && !op->ec_)
                    spin_.wait_answered(impl, op->kind_);
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
            op->ec_ = detail::stall_watch::cancelled_error(impl.stall_.load());
        }
        // scheduled or cancel_requested -> finished: the call's own result
        // stands even if cancellation arrived during it, so bytes already
        // moved are reported, never dropped.
        op->state_.store(op_state::finished, std::memory_order_release);
        finish_running(op);
    } else if (state == op_state::cancel_requested) {
        op->ec_ = detail::stall_watch::cancelled_error(op->impl_->stall_.load());
        op->state_.store(op_state::finished, std::memory_order_release);
        finish_running(op);
    }
    // aborted or finished: whoever set that state also settled the queue.
    op->complete();
}

void rpoll_service::cancel_operation(std::uint64_t impl_id, detail::wait_kind kind,
                                     const detail::rpoll_operation* target, std::uint64_t op_id) {
    std::unique_lock lock(mutex_);
    // The canceller may outlive its operation (and its socket): find the
    // operation among those still pending before touching it. A socket no
    // longer registered has none (its release closed it, ending them).
    const auto found = impls_.find(impl_id);
    if (found == impls_.end())
        return;
    auto& queue = found->second->queue(kind);
    rpoll_operation* op = nullptr;
    auto it = std::find(queue.ops.begin(), queue.ops.end(), target);
    if (it != queue.ops.end())
        op = *it;
    else if (queue.running == target)
        op = queue.running;
    // Not pending, or another operation at a freed one's address.
    if (op == nullptr || op->id_ != op_id)
        return;
    op_state state = op->state_.load(std::memory_order_acquire);
    if (state == op_state::queued && it != queue.ops.end()) {
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
    // operation_aborted, or timed_out when a stall ends them.
    const auto ec = detail::stall_watch::cancelled_error(impl.stall_.load());
    for (auto* queue : impl.queues()) {
        for (auto* op : queue->ops) {
            op->ec_ = ec;
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

} // namespace corio
