#pragma once

#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include <boost/asio/associated_allocator.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/recycling_allocator.hpp>

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

/// Bound into the handler's cancellation slot when the operation starts to
/// wait, and left there when it completes, as Asio's own operations leave
/// theirs (reactive_socket_service_base: emplace at the start, never a
/// clear). Clearing the slot from the thread that completes the operation
/// would race a cancellation emitted from another thread, since Asio's
/// cancellation_signal is not thread-safe; a canceller left behind instead
/// finds nothing to cancel. So it dereferences nothing of the operation
/// until the service has found it still pending, under the service mutex
/// (rpoll_service::cancel_operation).
class operation_canceller {
public:
    explicit operation_canceller(rpoll_operation& op) noexcept
        : service_(&op.service_), impl_id_(op.impl_->id_), kind_(op.kind_), op_(&op), op_id_(op.id_) {}

    void operator()(boost::asio::cancellation_type_t type) {
        using boost::asio::cancellation_type;
        if ((type & (cancellation_type::terminal | cancellation_type::partial |
                     cancellation_type::total)) != cancellation_type::none)
            service_->cancel_operation(impl_id_, kind_, op_, op_id_);
    }

private:
    rpoll_service* service_;
    std::uint64_t impl_id_;
    wait_kind kind_;
    rpoll_operation* op_; // compared, never dereferenced unless found pending
    std::uint64_t op_id_;
};

/// The handler-holding part of every operation kind: the handler, its
/// executor, outstanding work on that executor while the operation waits
/// (without it, io_context::run() returns while the operation waits, and a
/// coroutine would resume on the poller thread), its cancellation slot, and
/// completion.
///
/// Memory comes from the handler's associated allocator, by default Asio's
/// recycling_allocator, as for Asio's own operations: a round trip of
/// operations then reuses the thread's cached blocks instead of calling
/// malloc and free. The memory is given back before the handler runs, so the
/// handler's next operation can take the same block.
///
/// Derived provides `bool perform(socket_impl&)` and `auto results()`, a
/// tuple of the completion handler's arguments.
template <class Derived, class Handler, class IoExecutor>
class handler_operation : public rpoll_operation {
public:
    using allocator_type =
        boost::asio::associated_allocator_t<Handler, boost::asio::recycling_allocator<void>>;
    using executor_type = boost::asio::associated_executor_t<Handler, IoExecutor>;

    /// The allocator to give create(), taken from the handler before the
    /// handler is moved into the operation.
    static allocator_type allocator_for(const Handler& handler) noexcept {
        return boost::asio::get_associated_allocator(handler,
                                                     boost::asio::recycling_allocator<void>());
    }

    /// Allocates and constructs a Derived from `args` with `allocator`.
    template <class... Args>
    static Derived* create(const allocator_type& allocator, Args&&... args) {
        derived_allocator alloc(allocator);
        Derived* p = derived_traits::allocate(alloc, 1);
        try {
            return ::new (static_cast<void*>(p)) Derived(std::forward<Args>(args)...);
        } catch (...) {
            derived_traits::deallocate(alloc, p, 1);
            throw;
        }
    }

    void post_run() override {
        // The io_context's own executor behind any_io_executor (the common
        // case: a coroutine's or the stream's executor) is posted to
        // directly, without the polymorphic wrapper's property copies.
        if (const auto* io_executor = io_context_executor()) {
            // The service's own io_context (the common case): the operation
            // itself is queued, as boost::asio::post would queue the
            // function object it allocates (not a continuation).
            if (auto* scheduler = this->service_.own_scheduler(io_executor->context())) {
                scheduler->post_immediate_completion(this, false);
                return;
            }
            boost::asio::post(*io_executor, operation_run(this));
        } else {
            boost::asio::post(executor_, operation_run(this));
        }
    }

    void dispatch_run() override {
        if (const auto* io_executor = io_context_executor();
            io_executor && io_executor->running_in_this_thread()) {
            this->service_.run_operation(this);
            return;
        }
        post_run();
    }

    void complete() override {
        // The slot keeps its canceller (see operation_canceller).
        release_work();
        const allocator_type allocator = allocator_for(handler_);
        Handler handler(std::move(handler_));
        auto results = static_cast<Derived*>(this)->results();
        deallocate_self(allocator);
        // Already on the handler's executor (the run was posted there), so
        // the handler is invoked directly, as Asio's dispatch would. The run
        // itself counts as work on that executor until the handler returns.
        std::apply(std::move(handler), std::move(results));
    }

    void destroy() noexcept override {
        clear_slot();
        release_work();
        this->service_.forget_operation(this);
        deallocate_self(allocator_for(handler_));
    }

    /// Tries the call at once when nothing of its kind is pending on the
    /// socket; when it would block, spins for a while (adaptive_spin) and
    /// tries once more; otherwise, or when it still would block, waits.
    static void start(Derived* op) {
        socket_impl& impl = *op->impl_;
        if (op->service_.may_try_now(impl, op->kind_)) {
            bool finished = true;
            {
                std::lock_guard io_lock(impl.io_mutex_);
                if (!impl.socket_.is_valid())
                    op->ec_ = boost::asio::error::bad_descriptor;
                else if (impl.shutting_down_.load(std::memory_order_acquire) > 0)
                    finished = false; // waits until the rshutdown has returned
                else
                    finished = op->perform(impl) ||
                               (op->service_.spin().wait_ready(impl, op->kind_) &&
                                op->perform(impl));
            }
            if (finished) {
                // Done before anything could cancel it: no slot, no work
                // beyond the posted completion itself.
                finish(op);
                return;
            }
        }
        start_waiting(op);
    }

    /// For an operation whose first call was made by its initiation and
    /// would block (connect): waits without trying again.
    static void start_waiting(Derived* op) {
        // The slot is connected before the operation can be seen by the
        // poller or run elsewhere: a run on another thread clears it.
        connect_slot(op);
        op->track_work();
        op->service_.start_wait(op);
    }

    /// Completes, through the handler's executor, with ec_ and the results
    /// already set: an operation must never complete inside its initiation.
    static void finish(Derived* op) {
        op->state_.store(op_state::finished, std::memory_order_release);
        op->post_run();
    }

protected:
    handler_operation(wait_kind kind, rpoll_service& service, std::shared_ptr<socket_impl> impl,
                      Handler handler, const IoExecutor& io_executor)
        : rpoll_operation(kind, service, std::move(impl), &run_posted), handler_(std::move(handler)),
          executor_(boost::asio::get_associated_executor(handler_, io_executor)) {}

private:
    /// The scheduler's call of a run queued by post_run: runs it, or, when
    /// the io_context destroys it unrun at shutdown (`owner` null), destroys
    /// the operation, as operation_run does for a posted function object.
    static void run_posted(void* owner, boost::asio::detail::scheduler_operation* base,
                           const boost::system::error_code&, std::size_t) {
        auto* op = static_cast<Derived*>(static_cast<rpoll_operation*>(base));
        if (owner)
            op->service_.run_operation(op);
        else
            op->destroy();
    }

    using derived_allocator =
        typename std::allocator_traits<allocator_type>::template rebind_alloc<Derived>;
    using derived_traits = std::allocator_traits<derived_allocator>;
    using work_executor_type = std::decay_t<decltype(boost::asio::prefer(
        std::declval<executor_type>(), boost::asio::execution::outstanding_work.tracked))>;

    /// The io_context executor that executor_ is or wraps, if any.
    const boost::asio::io_context::executor_type* io_context_executor() const noexcept {
        using io_executor = boost::asio::io_context::executor_type;
        if constexpr (std::is_same_v<executor_type, io_executor>)
            return &executor_;
        else if constexpr (requires { executor_.template target<io_executor>(); })
            return executor_.template target<io_executor>();
        else
            return nullptr;
    }

    /// Outstanding work while the operation waits. On an io_context this is
    /// the context's work count, as Asio's handler_work keeps it; elsewhere a
    /// tracked copy of the executor.
    void track_work() {
#if !defined(BOOST_ASIO_NO_TS_EXECUTORS)
        if (const auto* io_executor = io_context_executor()) {
            io_executor->on_work_started();
            io_context_work_ = true;
            return;
        }
#endif
        work_.emplace(
            boost::asio::prefer(executor_, boost::asio::execution::outstanding_work.tracked));
    }

    void release_work() noexcept {
#if !defined(BOOST_ASIO_NO_TS_EXECUTORS)
        if (io_context_work_) {
            io_context_work_ = false;
            io_context_executor()->on_work_finished();
        }
#endif
        work_.reset();
    }

    void deallocate_self(const allocator_type& allocator) noexcept {
        derived_allocator alloc(allocator);
        Derived* self = static_cast<Derived*>(this);
        self->~Derived();
        derived_traits::deallocate(alloc, self, 1);
    }

    static void connect_slot(Derived* op) {
        auto slot = boost::asio::get_associated_cancellation_slot(op->handler_);
        if (slot.is_connected()) {
            op->id_ = op->service_.next_operation_id();
            slot.template emplace<operation_canceller>(*op);
            op->slot_connected_ = true;
        }
    }

    void clear_slot() noexcept {
        if (!slot_connected_)
            return;
        slot_connected_ = false;
        auto slot = boost::asio::get_associated_cancellation_slot(handler_);
        if (slot.is_connected())
            slot.clear();
    }

    Handler handler_;
    executor_type executor_;
    std::optional<work_executor_type> work_;
    bool io_context_work_ = false;
    bool slot_connected_ = false;
};

} // namespace corio::detail
