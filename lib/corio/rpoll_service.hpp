#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <poll.h>
#include <sys/epoll.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/system/error_code.hpp>

#include <corio/detail/adaptive_spin.hpp>
#include <corio/detail/futex_mutex.hpp>
#include <corio/detail/rpoll_operation.hpp>
#include <corio/detail/socket_impl.hpp>
#include <corio/detail/stall_watcher.hpp>
#include <corio/detail/unique_socket.hpp>
#include <corio/poll_mode.hpp>

namespace corio {

/// Drives readiness for every corio I/O object of one execution context.
///
/// rsocket descriptors are not what epoll can wait on: data readiness lives
/// on a hidden completion-channel fd, and only rpoll knows it. This
/// service waits with rpoll, which also takes kernel fds (so the TCP
/// transport shares the code path) and never runs user code while waiting:
/// a ready operation is handed to its handler's executor, where it makes its
/// nonblocking call. An operation holds outstanding work on that executor
/// from initiation to completion, so io_context::run() does not return while
/// one waits.
///
/// Kernel sockets (the tcp transport) never go to rpoll, which makes one
/// poll system call per kernel descriptor on every call, so idle tcp
/// streams would cost every poll. In poll_mode::thread on an io_context,
/// each kernel socket is registered with the io_context's own reactor, as
/// an Asio socket is, and a wait is a reactor operation there
/// (detail::reactor_wait_op, without Asio's per-wait epoll_ctl): an idle I/O thread
/// sleeps in the io_context and wakes straight into the ready socket, with
/// no other thread or second level of polling in between. Otherwise kernel
/// sockets wait in this service's epoll set, registered once and
/// edge-triggered (a wait costs no epoll_ctl), which rpoll takes as one more
/// descriptor.
///
/// In poll_mode::thread, one poller thread (started on the first wait that
/// needs it) blocks in rpoll with timeout -1 over the waiting rsockets, the
/// epoll set and an eventfd that wakes it when that set changes. In
/// poll_mode::busy, a task posted to the context polls with rpoll, or with
/// epoll_wait, timeout 0, runs what is ready and re-posts itself while
/// anything waits. rpoll never gets a finite timeout (rdma-core v44 leaks a
/// counter when one expires): the periodic re-check that rsocket listeners
/// need (their rpoll can miss a connection for up to 5 s on v44) comes from
/// a timerfd in the poll set.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: safe; every member may be called
/// from any thread.
class rpoll_service final : public boost::asio::execution_context::service {
public:
    /// Asio's use_service<> needs a static id with Boost 1.81; key_type alone
    /// does not compile there.
    static boost::asio::execution_context::id id;

    /// The service of `context` (Asio's use_service makes it); kernel sockets wait in its epoll
    /// set.
    explicit rpoll_service(boost::asio::execution_context& context);
    /// On an io_context (Asio's use_service picks this one when given the
    /// io_context itself; rpoll_service_of does so), kernel sockets wait in
    /// the io_context's own reactor in poll_mode::thread.
    explicit rpoll_service(boost::asio::io_context& context);
    ~rpoll_service() override;

    /// Chooses how waits are made from now on. `busy` needs the executor its
    /// polling task runs on (normally the io_context's).
    void set_mode(poll_mode mode, const boost::asio::any_io_executor& busy_executor);
    /// As set_mode above, with the executor the service was given for busy polling (its context's).
    void set_mode(poll_mode mode) { set_mode(mode, busy_executor_); }
    /// How waits are made now.
    poll_mode mode() const;

    /// Adaptive waiting in poll_mode::thread (detail::adaptive_spin): before
    /// a wait on an rsocket goes to the poller thread, the thread that
    /// started it polls that socket with rpoll, timeout 0, for about twice
    /// the time the socket's recent answers took to arrive
    /// (detail::spin_history), never longer than `budget`; zero turns
    /// spinning off. A socket whose spins keep finding nothing stops
    /// spinning (but for one wait in spin_history::probe_interval), so idle
    /// connections cost nothing. The one exception to the bound: an idle
    /// socket answered promptly again spins once for
    /// spin_history::recovery_budgets budgets, so that two idle ends of one
    /// connection find each other (doc/architecture.md).
    void set_spin_budget(std::chrono::nanoseconds budget) noexcept { spin_.set_budget(budget); }
    /// The budget a service starts with (adaptive_spin::default_budget).
    static constexpr std::chrono::nanoseconds default_spin_budget =
        detail::adaptive_spin::default_budget;
    /// The budget set_spin_budget set.
    std::chrono::nanoseconds spin_budget() const noexcept { return spin_.budget(); }
    /// The adaptive spin, for operations about to wait.
    const detail::adaptive_spin& spin() const noexcept { return spin_; }

    /// How long a listening rsocket may go unchecked while an accept waits.
    static constexpr std::chrono::milliseconds accept_retry_interval{10};

    // The interface below is for corio's I/O objects and operations.

    /// New state for an I/O object, registered until release_impl.
    std::shared_ptr<detail::socket_impl> create_impl();
    /// The I/O object is gone: closes the socket and unregisters the state.
    void release_impl(detail::socket_impl& impl) noexcept;

    /// Gives `impl` an open socket (after close or before first use).
    void attach(detail::socket_impl& impl, detail::unique_socket socket, transport t,
                detail::socket_impl::phase phase);

    /// True when nothing of `kind` is queued or running on `impl`, so a new
    /// operation may make its call at once without overtaking another.
    bool may_try_now(detail::socket_impl& impl, detail::wait_kind kind);

    /// Queues `op` (state queued) until its socket is ready. If the socket
    /// was closed meanwhile, `op` completes with operation_aborted.
    void start_wait(detail::rpoll_operation* op);

    /// Runs `op` on its handler's executor: the nonblocking call, then
    /// completion or a new wait. Called through rpoll_operation::post_run.
    void run_operation(detail::rpoll_operation* op);

    /// The scheduler of `context` if it is the io_context this service
    /// belongs to, else null. An operation whose handler runs there is
    /// queued to it as Asio queues its own operations
    /// (handler_operation::post_run), without a function object to allocate.
    boost::asio::detail::io_context_impl* own_scheduler(const boost::asio::io_context& context) const noexcept {
        return &context == io_context_ ? scheduler_ : nullptr;
    }

    /// `op` is being destroyed unrun (io_context shutdown): its socket must
    /// not keep pointing at it.
    void forget_operation(detail::rpoll_operation* op) noexcept;

    /// Per-operation cancellation (terminal, partial or total alike: a
    /// corio operation that has moved no bytes has no side effects) of the
    /// operation at `op` with id `op_id`, waiting for `kind` on the socket
    /// whose id is `impl_id`, if it is still pending; nothing otherwise.
    /// Safe from any thread, also after the operation has completed and
    /// been freed: `op` is dereferenced only once found in its socket's
    /// queue.
    void cancel_operation(std::uint64_t impl_id, detail::wait_kind kind,
                          const detail::rpoll_operation* op, std::uint64_t op_id);
    /// A new operation id (rpoll_operation::id_).
    std::uint64_t next_operation_id() noexcept {
        return next_operation_id_.fetch_add(1, std::memory_order_relaxed);
    }

    /// Ends every pending operation on `impl` with operation_aborted.
    void cancel_all(detail::socket_impl& impl);

    /// cancel_all, then closes the socket. When the socket's descriptor is in
    /// an rpoll under way, the close is left to whoever made that rpoll, once
    /// it returns: rclose under a concurrent rpoll frees what rpoll reads.
    boost::system::error_code close(detail::socket_impl& impl);

    /// Shuts down `impl`'s socket. An rsocket's rshutdown may wait for the
    /// peer to make progress (for control-message credits and for its sends
    /// to complete); when that peer is served by this same io_context, a call
    /// here would never return. So rsockets are shut down in the
    /// background (detail::run_in_background) and this returns at once.
    boost::system::error_code shutdown(detail::socket_impl& impl, int how);

    /// A blocking read_some or write_some on `impl` is about to wait in an
    /// rpoll of its own on the descriptor, beside `wake_fd`, which close()
    /// signals; close() then leaves the descriptor to end_blocking_wait.
    /// operation_aborted once the socket is closed.
    boost::system::error_code begin_blocking_wait(detail::socket_impl& impl, int& wake_fd);
    /// That rpoll returned; false when the socket was closed meanwhile (the
    /// call then ends with operation_aborted). The last waiter of a closed
    /// socket disposes of its descriptor here.
    bool end_blocking_wait(detail::socket_impl& impl);

    /// Closes `socket` where closing cannot stall an io_context: kernel
    /// sockets at once, rsockets in the background
    /// (detail::run_in_background: rclose runs rshutdown, which can wait for
    /// the peer). An error only when the background closer could not start
    /// a thread; the close is still queued then.
    boost::system::error_code dispose(detail::unique_socket socket);

    /// Marks `impl` as a listening rsocket whose accepts are retried on a tick.
    void set_retry_accept(detail::socket_impl& impl, bool on);
    /// corio::stall_timeout on a connected stream `impl`: zero turns it off.
    boost::system::error_code set_stall_timeout(detail::socket_impl& impl,
                                                std::chrono::nanoseconds timeout);

    /// Marks `impl` as an rsocket whose connect is retried on that tick.
    void set_retry_connect(detail::socket_impl& impl, bool on);

private:
    /// What a background shutdown job reaches the service through: the
    /// service while it lives, null from its destructor on. Jobs hold it by
    /// shared_ptr, so one that outlives the service touches nothing freed.
    struct background_anchor {
        std::mutex mutex;
        rpoll_service* service = nullptr;
    };

    rpoll_service(boost::asio::execution_context& context, boost::asio::io_context* io_context);
    /// The background half of shutdown() for an rsocket: waits until
    /// nothing else calls into the socket, runs rshutdown, then lets the
    /// socket's waits go on.
    static void shutdown_in_background(background_anchor& anchor, detail::socket_impl& impl,
                                       int fd, int how);
    void shutdown() override;

    void ensure_poller_started(std::unique_lock<detail::futex_mutex>& lock);
    void poller_loop();
    void busy_poll();
    void post_busy_poll(std::unique_lock<detail::futex_mutex>& lock);
    /// One rpoll over every socket with a wait, then hands ready operations
    /// to their executors. Called with `lock` held; unlocks around rpoll.
    void poll_once(std::unique_lock<detail::futex_mutex>& lock, detail::socket_impl::poller self);
    void wake_poller(std::unique_lock<detail::futex_mutex>& lock);
    void on_wait_changed(std::unique_lock<detail::futex_mutex>& lock);
    void finish_running(detail::rpoll_operation* op);
    /// After any change to `queue` (one of `impl`'s): publishes its idle
    /// state and keeps watched_ in step. Called with the lock held.
    void queue_changed(detail::socket_impl& impl, detail::wait_queue& queue);
    /// Brings `impl`'s place in the poll sets (watched_ for rpoll, or armed
    /// in epoll_fd_) in line with what its queues now want.
    void update_watch(detail::socket_impl& impl);
    /// Registers `impl`'s kernel socket in epoll_fd_, edge-triggered, for
    /// POLLIN and POLLPRI, and POLLOUT too once `wanted` has it. False when
    /// epoll refuses the descriptor.
    bool arm_epoll(detail::socket_impl& impl, short wanted);
    /// Takes `impl`'s descriptor out of epoll_fd_ (a switch to the reactor).
    void disarm_epoll(detail::socket_impl& impl) noexcept;
    /// take_ready for an epoll event: also marks the kinds it found no
    /// operation waiting for (socket_impl::epoll_unclaimed_).
    void take_epoll_ready(detail::socket_impl& impl, short revents,
                          std::vector<detail::rpoll_operation*>& ready);
    /// Moves the first waiting operation of `kind` to running and returns
    /// it, or null when none may be polled for. Lock held.
    detail::rpoll_operation* take_first(detail::socket_impl& impl, detail::wait_kind kind);
    /// Moves the first waiting operation of each kind that `revents` (or an
    /// accept retry) makes ready to running, into `ready`.
    void take_ready(detail::socket_impl& impl, short revents, bool retry,
                    std::vector<detail::rpoll_operation*>& ready);
    /// Whether any operation waits for readiness. Lock held.
    bool any_waiting() const noexcept { return !watched_.empty() || epoll_waiting_ > 0; }
    /// take_ready for each of `count` epoll events.
    void take_epoll_events(const epoll_event* events, int count, bool drain_wake,
                           std::vector<detail::rpoll_operation*>& ready);
    /// Runs each ready operation here (dispatch_run), posting the rest if one throws.
    void run_ready(const std::vector<detail::rpoll_operation*>& ready);
    /// Puts the wake eventfd into epoll_fd_, where a poller thread waiting on
    /// epoll_fd_ needs it.
    bool add_wake_to_epoll() noexcept;
    /// How a kernel socket about to wait should: reactor or epoll. Lock held.
    detail::socket_impl::watch_via kernel_watch(const detail::socket_impl& impl) const noexcept {
        return mode_ == poll_mode::thread && io_context_ && !impl.reactor_refused_
                   ? detail::socket_impl::watch_via::reactor
                   : detail::socket_impl::watch_via::epoll;
    }
    /// Brings `impl`'s waits in the io_context's reactor in line with
    /// what its queues want: starts missing ones, cancels unwanted ones, and
    /// lets go of the registration once the socket is closed. Lock held.
    void update_reactor_waits(detail::socket_impl& impl);
    /// Starts `impl`'s reactor wait of `kind` if its queue wants one; true
    /// when a pending one is no longer wanted (to be cancelled). Lock held.
    bool update_reactor_wait(detail::socket_impl& impl, detail::wait_kind kind);
    /// Cancels `impl`'s pending reactor waits, every kind. Lock held.
    static void cancel_reactor_waits(detail::socket_impl& impl);
    /// A reactor wait of `kind` on `impl` ended (`ready`: by an event, so
    /// the descriptor was ready): takes the first waiting operation of that
    /// kind and runs it here (on the io_context's thread).
    void on_reactor_wait(detail::socket_impl& impl, detail::wait_kind kind,
                         const boost::system::error_code& ec, bool ready);
    /// Lets go of `impl`'s reactor registration (pending waits end with
    /// operation_aborted) without closing its descriptor. Lock held.
    static void release_reactor(detail::socket_impl& impl) noexcept;
    /// detail::reactor_wait_op's wake_function: on_reactor_wait.
    static void wake_from_reactor(void* service, void* impl, detail::wait_kind kind,
                                  const boost::system::error_code& ec, bool ready);
    void abort_queued(detail::socket_impl& impl,
                      std::vector<detail::rpoll_operation*>& aborted);
    /// (rpoll_service_stall.cpp) An operation is about to wait on `impl`,
    /// whose stall watch is `stall`: false when the socket stalled (the
    /// operation ends with timed_out); else restarts the stall clock if
    /// nothing was pending and hands the socket to the watcher. Lock held.
    bool stall_wait_begins(detail::socket_impl& impl, detail::stall_watch& stall);
    /// The watcher's check at `impl`'s deadline: trips a stalled socket
    /// (its pending operations end with timed_out) and says when to look
    /// again, or nullopt when nothing is pending. Lock not held.
    std::optional<std::chrono::steady_clock::time_point> check_stall(detail::socket_impl& impl);
    /// Ends the watcher thread, if any (service shutdown). Lock not held.
    void stop_stall_watcher() noexcept;

    mutable detail::futex_mutex mutex_;
    std::unordered_map<std::uint64_t, detail::socket_impl*> impls_;
    /// The open rsockets with an operation waiting to be polled for, kept up
    /// to date as waits start and end (socket_impl::watch_index_), so that
    /// building an rpoll set does not scan every socket of the context.
    std::vector<detail::socket_impl*> watched_;
    /// Set when watched_ or what one of its sockets waits for changed: a
    /// poller thread asleep in rpoll must wake and rebuild its set.
    bool rpoll_set_dirty_ = false;
    /// Kernel sockets wait here instead (registered once, edge-triggered,
    /// keyed by socket_impl::id_), with the wake eventfd (wake_id): rpoll would make
    /// one poll system call per kernel descriptor on each call.
    int epoll_fd_ = -1;
    static constexpr std::uint64_t wake_id = 0; // socket ids start at 1
    /// Kernel sockets with an operation waiting in epoll_fd_.
    std::size_t epoll_waiting_ = 0;
    /// The io_context this service belongs to, if it is one: then, in thread
    /// mode, kernel sockets wait in its reactor (socket_impl::reactor_).
    boost::asio::io_context* io_context_ = nullptr;
    /// Its scheduler (own_scheduler), if it is one.
    boost::asio::detail::io_context_impl* scheduler_ = nullptr;
    /// What one poll_once needs, kept between calls; [0] the poller thread's,
    /// [1] the busy task's.
    struct poll_scratch {
        std::vector<pollfd> fds;
        std::vector<std::uint64_t> polled;
        std::vector<detail::rpoll_operation*> ready;
        std::vector<epoll_event> events = std::vector<epoll_event>(64);
    };
    poll_scratch scratch_[2];
    std::uint64_t next_id_ = 1;
    std::atomic<std::uint64_t> next_operation_id_{1};
    poll_mode mode_ = poll_mode::thread;
    boost::asio::any_io_executor busy_executor_;
    /// own_scheduler of busy_executor_'s io_context, when busy_executor_ is
    /// this service's io_context's executor (set_mode): the busy task is then
    /// queued there as busy_task_.
    boost::asio::detail::io_context_impl* busy_scheduler_ = nullptr;
    bool busy_posted_ = false;
    /// The busy task as the scheduler's own operation, queued again after
    /// every turn when busy_executor_ is this service's io_context (the
    /// common case): nothing to allocate or type-erase per turn, as Asio's
    /// reactor task is queued. Queued at most once (busy_posted_).
    struct busy_task final : boost::asio::detail::scheduler_operation {
        explicit busy_task(rpoll_service& service) noexcept
            : scheduler_operation(&run), service_(service) {}
        /// The scheduler's call: a turn, or nothing when the io_context
        /// destroys its queue at shutdown (`owner` null); the task is this
        /// service's member, not the scheduler's to free.
        static void run(void* owner, scheduler_operation* base, const boost::system::error_code&,
                        std::size_t);
        rpoll_service& service_;
    };
    busy_task busy_task_{*this};

    // Poller thread state.
    std::thread poller_;
    bool stopping_ = false;
    bool poller_in_rpoll_ = false;
    bool wake_pending_ = false;
    int wake_fd_ = -1;
    int tick_fd_ = -1;
    bool tick_armed_ = false;
    std::chrono::steady_clock::time_point last_busy_tick_{};

    /// Sockets closed while their descriptor was in an rpoll under way, per
    /// poller (thread, busy); whoever made that rpoll disposes of them once
    /// it returns.
    std::vector<detail::unique_socket> deferred_closes_[2];

    std::shared_ptr<background_anchor> anchor_;
    /// Started by the first stall_timeout set on a stream of this context.
    std::unique_ptr<detail::stall_watcher> stall_watcher_;
    detail::adaptive_spin spin_;

};

/// The rpoll_service of `executor`'s execution context. An io_context,
/// also behind a strand or a polymorphic executor, is handed to use_service
/// as itself, so that a service made now is made with
/// rpoll_service(io_context&): the service must behave the same whichever
/// executor touches it first, and use_service given a bare
/// execution_context cannot tell that it is an io_context.
template <class Executor>
rpoll_service& rpoll_service_of(const Executor& executor) {
    using io_executor = boost::asio::io_context::executor_type;
    if constexpr (std::is_same_v<Executor, io_executor>) {
        return boost::asio::use_service<rpoll_service>(
            boost::asio::query(executor, boost::asio::execution::context));
    } else if constexpr (requires { executor.get_inner_executor(); }) {
        // A strand: the service belongs to what it wraps.
        return rpoll_service_of(executor.get_inner_executor());
    } else {
        if constexpr (requires { executor.template target<io_executor>(); }) {
            if (const auto* target = executor.template target<io_executor>())
                return rpoll_service_of(*target);
            using io_strand = boost::asio::strand<io_executor>;
            if (const auto* target = executor.template target<io_strand>())
                return rpoll_service_of(*target);
            using any_strand = boost::asio::strand<boost::asio::any_io_executor>;
            if (const auto* target = executor.template target<any_strand>())
                return rpoll_service_of(*target);
        }
        return boost::asio::use_service<rpoll_service>(
            boost::asio::query(executor, boost::asio::execution::context));
    }
}

/// Sets the poll mode of the rpoll_service of `context`'s execution context.
template <class ExecutionContext>
void set_poll_mode(ExecutionContext& context, poll_mode mode) {
    boost::asio::use_service<rpoll_service>(context).set_mode(mode, context.get_executor());
}

} // namespace corio
