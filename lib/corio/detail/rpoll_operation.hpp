#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <boost/asio/detail/scheduler_operation.hpp>
#include <boost/system/error_code.hpp>

namespace corio {
class rpoll_service;
}

namespace corio::detail {

class socket_impl;

/// Which readiness an operation waits for.
enum class wait_kind {
    read,  ///< POLLIN: receive, accept
    write, ///< POLLOUT: send, connect
    error, ///< POLLPRI, POLLERR, POLLHUP: async_wait(wait_error)
};

/// How many wait_kinds there are: one wait queue per kind on each socket.
inline constexpr int wait_kind_count = 3;

/// Who owns an operation, and what it must do next. Three threads can touch an
/// operation at once: the poller (thread mode) or busy poll takes it off its
/// socket's queue; the handler's executor runs it; the thread that emits its
/// cancellation signal, or calls cancel() or close(), tries to end it.
///
///            initiate
///               |  first try would block
///               v
///   +-----> [queued] ------ cancel / close -----> [aborted] --+
///   |           | poller: ready                               |
///   |           v                                             |
///   +---- [scheduled] --- cancel / close ---> [cancel_requested]
///  would        | perform finished                  |         |
///  block        v                                   v         v
///           [finished] -----------------------> run_operation completes
///
/// Moves out of `queued` happen under the service mutex, so the poller and a
/// canceller agree on who took the operation. Moves out of `scheduled` happen
/// on two threads without a shared lock: the executor running the operation
/// and the canceller. They race through compare-exchange on `state_`; see
/// rpoll_service::run_operation for each side.
enum class op_state : int {
    /// In its socket's wait queue. Moved only under the service mutex.
    queued,
    /// Taken off the queue by the poller; a run is posted to the handler's
    /// executor, which will make the nonblocking call.
    scheduled,
    /// Cancelled while scheduled. The run makes no further call and completes
    /// with operation_aborted, unless the call it was making already moved
    /// bytes: those are reported, never dropped.
    cancel_requested,
    /// Removed from its queue by cancel or close, ec_ set; the posted run
    /// only completes it.
    aborted,
    /// The call finished (success or error) with ec_ and bytes_ set; the
    /// posted run only completes it.
    finished,
};

/// The type-erased part of every corio operation. Concrete kinds (receive,
/// send, accept, connect) each make one nonblocking call in perform().
///
/// It is also an operation of Asio's scheduler, as Asio's own socket
/// operations are, so that a run posted to the io_context that owns the
/// service needs no allocation (handler_operation::post_run); the scheduler
/// calls `run_posted` with which the concrete kind constructs it.
class rpoll_operation : public boost::asio::detail::scheduler_operation {
public:
    virtual ~rpoll_operation() = default;
    rpoll_operation(const rpoll_operation&) = delete;
    rpoll_operation& operator=(const rpoll_operation&) = delete;

    /// Makes the operation's nonblocking call on `impl`'s socket. Returns
    /// false when the call would block; otherwise sets ec_ and bytes_ and
    /// returns true. Runs on the handler's executor with the socket's I/O
    /// mutex held.
    virtual bool perform(socket_impl& impl) = 0;

    /// Posts a run of this operation (rpoll_service::run_operation) to the
    /// handler's executor. If that run is destroyed unrun, at io_context
    /// shutdown, it destroys the operation.
    virtual void post_run() = 0;

    /// Runs the operation here when the caller is already running on the
    /// handler's executor (an io_context's, on this thread), else post_run().
    /// Only for callers outside any initiating function.
    virtual void dispatch_run() = 0;

    /// Invokes the handler with ec_ and bytes_, freeing the operation first.
    /// Runs on the handler's executor.
    virtual void complete() = 0;

    /// Frees the operation without invoking its handler (service shutdown).
    virtual void destroy() noexcept = 0;

    std::atomic<op_state> state_{op_state::queued};
    const wait_kind kind_;
    rpoll_service& service_;
    /// Keeps the socket's state alive while the operation can still run.
    const std::shared_ptr<socket_impl> impl_;
    boost::system::error_code ec_;
    std::size_t bytes_ = 0;
    /// Set when the poller or the reactor takes the operation off its queue:
    /// whether the report that ended its wait said the socket is ready for
    /// its kind (an rpoll or epoll event for it; not an accept retry tick or
    /// a reactor wait that ended early). Only a wait (async_wait) uses it:
    /// the report is its answer. Written under the service mutex before the
    /// run is handed over, read by that run.
    bool reported_ready_ = false;
    /// Unique in its service, set when a cancellation slot is connected
    /// (operation_canceller): the canceller finds the operation by its
    /// address and this, so one freed and another allocated at the same
    /// address are never taken for each other.
    std::uint64_t id_ = 0;

protected:
    rpoll_operation(wait_kind kind, rpoll_service& service, std::shared_ptr<socket_impl> impl,
                    func_type run_posted) noexcept
        : scheduler_operation(run_posted), kind_(kind), service_(service), impl_(std::move(impl)) {}
};

} // namespace corio::detail
