#pragma once

#include <memory>
#include <tuple>
#include <utility>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>

#include <corio/detail/rpoll_operation.hpp>
#include <corio/detail/socket_impl.hpp>
#include <corio/rpoll_service.hpp>

namespace corio::detail {

/// What a posted run owns: if the executor destroys it unrun (io_context
/// shutdown), the operation is destroyed with it instead of leaking.
class operation_run {
public:
    explicit operation_run(rpoll_operation* op) noexcept : op_(op) {}
    operation_run(operation_run&& other) noexcept : op_(std::exchange(other.op_, nullptr)) {}
    operation_run& operator=(operation_run&&) = delete;
    ~operation_run() {
        if (op_)
            op_->destroy();
    }

    void operator()() {
        rpoll_operation* op = std::exchange(op_, nullptr);
        op->service_.run_operation(op);
    }

private:
    rpoll_operation* op_;
};

/// Bound into the handler's cancellation slot while the operation is pending.
class operation_canceller {
public:
    explicit operation_canceller(rpoll_operation* op) noexcept : op_(op) {}

    void operator()(boost::asio::cancellation_type_t type) {
        using boost::asio::cancellation_type;
        if ((type & (cancellation_type::terminal | cancellation_type::partial |
                     cancellation_type::total)) != cancellation_type::none)
            op_->service_.cancel_operation(op_);
    }

private:
    rpoll_operation* op_;
};

/// The handler-holding part of every operation kind: the handler, outstanding
/// work on its executor from initiation to completion (without it,
/// io_context::run() returns while the operation waits, and a coroutine would
/// resume on the poller thread), its cancellation slot, and completion.
///
/// Derived provides `bool perform(socket_impl&)` and `auto results()`, a
/// tuple of the completion handler's arguments.
template <class Derived, class Handler, class IoExecutor>
class handler_operation : public rpoll_operation {
public:
    void post_run() override {
        boost::asio::post(work_, operation_run(this));
    }

    void complete() override {
        clear_slot();
        Handler handler(std::move(handler_));
        auto work = std::move(work_);
        auto results = static_cast<Derived*>(this)->results();
        delete this;
        // Already on the handler's executor (the run was posted there), so
        // the handler is invoked directly, as Asio's dispatch would.
        std::apply(std::move(handler), std::move(results));
    }

    void destroy() noexcept override {
        clear_slot();
        this->service_.forget_operation(this);
        delete this;
    }

    /// Connects the handler's cancellation slot, tries the call at once when
    /// nothing of its kind is pending on the socket, and otherwise waits.
    static void start(Derived* op) {
        connect_slot(op);
        socket_impl& impl = *op->impl_;
        if (op->service_.may_try_now(impl, op->kind_)) {
            bool finished = true;
            {
                std::lock_guard io_lock(impl.io_mutex_);
                if (impl.socket_.is_valid())
                    finished = op->perform(impl);
                else
                    op->ec_ = boost::asio::error::bad_descriptor;
            }
            if (finished) {
                finish(op);
                return;
            }
        }
        op->service_.start_wait(op);
    }

    /// For an operation whose first call was made by its initiation and
    /// would block (connect): waits without trying again.
    static void start_waiting(Derived* op) {
        connect_slot(op);
        op->service_.start_wait(op);
    }

    /// Completes, through the handler's executor, with ec_ and the results
    /// already set: an operation must never complete inside its initiation.
    static void finish(Derived* op) {
        op->state_.store(op_state::finished, std::memory_order_release);
        op->post_run();
    }

protected:
    using work_executor_type = std::decay_t<decltype(boost::asio::prefer(
        std::declval<boost::asio::associated_executor_t<Handler, IoExecutor>>(),
        boost::asio::execution::outstanding_work.tracked))>;

    handler_operation(wait_kind kind, rpoll_service& service, std::shared_ptr<socket_impl> impl,
                      Handler handler, const IoExecutor& io_executor)
        : rpoll_operation(kind, service, std::move(impl)), handler_(std::move(handler)),
          work_(boost::asio::prefer(boost::asio::get_associated_executor(handler_, io_executor),
                                    boost::asio::execution::outstanding_work.tracked)) {}

private:
    static void connect_slot(Derived* op) {
        auto slot = boost::asio::get_associated_cancellation_slot(op->handler_);
        if (slot.is_connected())
            slot.template emplace<operation_canceller>(op);
    }

    void clear_slot() noexcept {
        auto slot = boost::asio::get_associated_cancellation_slot(handler_);
        if (slot.is_connected())
            slot.clear();
    }

    Handler handler_;
    work_executor_type work_;
};

} // namespace corio::detail
