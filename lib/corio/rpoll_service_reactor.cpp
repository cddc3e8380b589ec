#include "corio/rpoll_service.hpp"

#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>

// The bridge to the io_context's own reactor: in thread mode on an
// io_context each kernel socket is registered there, and a wait is the
// socket's own reactor_wait_op of that kind. The race resolved here: the
// registration is let go of (never closed) before the descriptor is, so the
// reactor never holds a number that may be reused.

namespace corio {

using detail::rpoll_operation;
using detail::socket_impl;
using detail::wait_kind;

void rpoll_service::release_reactor(socket_impl& impl) noexcept {
    if (!impl.reactor_)
        return;
    // Deregistered, not closed: the descriptor is socket_'s to close. Pending
    // waits end with operation_aborted; each keeps impl alive until then.
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
            // own sockets); a read or write wait then starts without a
            // system call (detail::reactor_wait_op says why that is safe).
            impl.reactor_.emplace(*io_context_, impl.socket_.get());
        } catch (const boost::system::system_error&) {
            impl.reactor_.reset();
            impl.reactor_refused_ = true;
            impl.watch_ = socket_impl::watch_via::none;
            update_watch(impl);
            return;
        }
    }
    bool cancel = false;
    for (auto kind : {wait_kind::read, wait_kind::write, wait_kind::error})
        cancel = update_reactor_wait(impl, kind) || cancel;
    if (cancel)
        cancel_reactor_waits(impl);
}

void rpoll_service::cancel_reactor_waits(socket_impl& impl) {
    // Ends every kind's waits; the other kinds' handler starts its wait again
    // if it is still wanted.
    impl.reactor_->cancel();
}

bool rpoll_service::update_reactor_wait(socket_impl& impl, wait_kind kind) {
    const auto& queue = impl.queue(kind);
    bool& waiting = impl.reactor_waiting_[static_cast<int>(kind)];
    if (queue.wants_poll()) {
        if (!waiting) {
            waiting = true;
            auto& op = impl.reactor_waits_[static_cast<int>(kind)];
            op.prepare(&rpoll_service::wake_from_reactor, this, &impl, kind,
                       impl.shared_from_this());
            // Connected: its reads and writes are what wait (a connect or
            // an accept never waits on a connected socket).
            const bool may_end_early = kind != wait_kind::error &&
                                       impl.phase_.load(std::memory_order_relaxed) ==
                                           socket_impl::phase::connected;
            impl.reactor_->start_wait(op, kind, may_end_early);
        }
        return false;
    }
    // The operation it was for was cancelled or aborted: a wait left pending
    // would keep io_context::run() from returning.
    return waiting && queue.idle();
}

void rpoll_service::wake_from_reactor(void* service, void* impl, wait_kind kind,
                                      const boost::system::error_code& ec, bool ready) {
    static_cast<rpoll_service*>(service)->on_reactor_wait(*static_cast<socket_impl*>(impl), kind,
                                                          ec, ready);
}

void rpoll_service::on_reactor_wait(socket_impl& impl, wait_kind kind,
                                    const boost::system::error_code& ec, bool ready) {
    rpoll_operation* op = nullptr;
    {
        std::lock_guard lock(mutex_);
        impl.reactor_waiting_[static_cast<int>(kind)] = false;
        // Release: a call that reads the new count (socket_impl::
        // note_would_block) comes after this wait's end, so after the
        // reactor cleared its mark for the kind.
        impl.reactor_wait_ends_[static_cast<int>(kind)].fetch_add(1, std::memory_order_release);
        if (impl.closed_ || stopping_)
            return;
        if (!ec || ec != boost::asio::error::operation_aborted) {
            // Another error (the reactor refused the descriptor) also runs
            // the operation: its own call reports what is wrong, and the
            // socket's next wait goes to epoll.
            if (ec)
                impl.reactor_refused_ = true;
            op = take_first(impl, kind);
            if (op)
                op->reported_ready_ = ready;
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

} // namespace corio
