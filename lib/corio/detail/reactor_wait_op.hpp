#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <utility>

#include <boost/asio/detail/reactor_op.hpp>
#include <boost/system/error_code.hpp>

#include <corio/detail/rpoll_operation.hpp>

namespace corio::detail {

/// One kind of wait of one kernel socket in its io_context's own reactor
/// (Asio's epoll_reactor), made by reactor_registration::start_wait. Unlike
/// an Asio async_wait, the object is the socket's for its whole life and
/// reused for every wait of its kind: no allocation, no handler to move, no
/// executor work object per wait.
///
/// It reports readiness without reading anything: its perform step always
/// answers done_and_exhausted. That answer is what lets a wait start without
/// the epoll_ctl that Asio's own async_wait makes each time (a wait started
/// with reactor_registration::start_wait's may_end_early): the reactor then
/// clears the descriptor's "try speculatively" mark for this kind, and sets
/// it again only when an epoll event of the kind arrives. So a wait that
/// starts while the mark is clear knows that nothing arrived since the last
/// wait of its kind ended, and the operation it is for made its call after
/// that end (rpoll_service::on_reactor_wait runs it; for an async_wait after
/// a would_block, the call its socket_impl::would_block_note records):
/// whatever came before that call, the call saw; whatever comes after, raises
/// an edge-triggered event. A wait that starts while the mark is set
/// (something arrived meanwhile, or the registration is new) ends at once,
/// possibly with the descriptor not ready, and its operation tries again: its
/// call says "would block" and it waits once more, now with the mark clear.
///
/// So the end of a wait says "ready" only when an epoll event ended it
/// (`ready` in the wake_function): the reactor then found the descriptor
/// ready for the kind at that epoll_wait, and the operation may take that
/// as its answer, as Asio's reactive_wait_op does, without asking again. An
/// early end says nothing of the kind. Which one it was is told by where
/// perform_wait runs: inside start_op (starting_ set by the thread that
/// starts the wait) or from an event.
class reactor_wait_op : public boost::asio::detail::reactor_op {
public:
    /// Called on a thread running the io_context when the wait ends, with
    /// success (ready, or possibly ready), operation_aborted (cancelled,
    /// deregistered) or another error (the reactor cannot wait for this
    /// descriptor). Never called when the io_context destroys the wait
    /// unrun at its shutdown.
    using wake_function = void (*)(void* context, void* target, wait_kind kind,
                                   const boost::system::error_code& ec, bool ready);

    reactor_wait_op() noexcept
        : reactor_op(boost::system::error_code(), &perform_wait, &complete_wait) {}

    reactor_wait_op(const reactor_wait_op&) = delete;
    reactor_wait_op& operator=(const reactor_wait_op&) = delete;

    /// Sets what the next wait reports to. `keep_alive` owns `target` and is
    /// held until the wait ends, so the object outlives its wait.
    void prepare(wake_function wake, void* context, void* target, wait_kind kind,
                 std::shared_ptr<void> keep_alive) noexcept {
        ec_ = boost::system::error_code();
        wake_ = wake;
        context_ = context;
        target_ = target;
        kind_ = kind;
        keep_alive_ = std::move(keep_alive);
    }

private:
    friend class reactor_registration;

    static status perform_wait(reactor_op* base) {
        auto* op = static_cast<reactor_wait_op*>(base);
        // Under the descriptor's lock in both places that call it. Inside
        // start_op it reads the starting thread's own true; from an event it
        // reads false, or, when the event comes so soon after the start that
        // the starting thread has not yet cleared starting_, a stale true,
        // which only costs the operation a look of its own.
        op->ended_by_event_ = !op->starting_.load(std::memory_order_relaxed);
        return done_and_exhausted;
    }

    static void complete_wait(void* owner, boost::asio::detail::scheduler_operation* base,
                              const boost::system::error_code&, std::size_t) {
        auto* op = static_cast<reactor_wait_op*>(base);
        // Everything is taken out first: the call may start the next wait
        // with this object, and dropping keep_alive may free it.
        std::shared_ptr<void> keep_alive = std::move(op->keep_alive_);
        const boost::system::error_code ec = op->ec_;
        // Cleared whatever the end, so that no wait inherits it. A performed
        // wait has no error, so ec only matters for an end that never ran
        // perform_wait, where the flag is false already.
        const bool ready = std::exchange(op->ended_by_event_, false) && !ec;
        if (owner)
            op->wake_(op->context_, op->target_, op->kind_, ec, ready);
    }

    wake_function wake_ = nullptr;
    void* context_ = nullptr;
    void* target_ = nullptr;
    wait_kind kind_ = wait_kind::read;
    std::shared_ptr<void> keep_alive_;
    /// Set by reactor_registration::start_wait while start_op runs, so that
    /// perform_wait tells an early end from an event's. Atomic: an event on
    /// another thread may read it while the starting thread clears it.
    std::atomic<bool> starting_{false};
    /// What perform_wait found; read once the scheduler has handed the
    /// completion over, which orders it after the write.
    bool ended_by_event_ = false;
};

} // namespace corio::detail
