#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include <poll.h>
#include <unistd.h>

#include <corio/detail/futex_mutex.hpp>
#include <corio/detail/reactor_registration.hpp>
#include <corio/detail/reactor_wait_op.hpp>
#include <corio/detail/remote_mapping.hpp>
#include <corio/detail/rpoll_operation.hpp>
#include <corio/detail/spin_history.hpp>
#include <corio/detail/stall_watch.hpp>
#include <corio/detail/unique_socket.hpp>
#include <corio/transport.hpp>

namespace corio::detail {

/// `kind` as one bit of a set of kinds (socket_impl::epoll_unclaimed_).
constexpr std::uint8_t wait_kind_bit(wait_kind kind) noexcept {
    return static_cast<std::uint8_t>(1u << static_cast<unsigned>(kind));
}

/// Operations waiting for one kind of readiness on one socket, oldest first.
struct wait_queue {
    std::deque<rpoll_operation*> ops;
    /// The operation handed to its executor (state scheduled or
    /// cancel_requested), if any. The socket is left out of the poll set for
    /// this kind until that run ends, which keeps operations of one kind in
    /// order.
    rpoll_operation* running = nullptr;

    /// idle(), readable without the service mutex. A new operation reads it
    /// to decide whether it may make its call at once (may_try_now), which
    /// would otherwise take the service mutex once per operation.
    ///
    /// Transitions, each made by sync() under the service mutex right after
    /// the queue changed:
    ///   true -> false: only start_wait, on the thread initiating an
    ///     operation on this socket (Asio's rule: one object, one thread at a
    ///     time), so that thread never reads a stale true;
    ///   false -> true: the last queued or running operation of this kind
    ///     finishes, is cancelled or aborted, on any thread. A stale false
    ///     only sends a new operation to wait instead of trying first.
    /// Release here, acquire in may_try_now: an operation that sees true
    /// also sees the socket state its predecessor left.
    std::atomic<bool> idle_now{true};

    bool wants_poll() const noexcept { return !ops.empty() && running == nullptr; }
    bool idle() const noexcept { return ops.empty() && running == nullptr; }
    void sync() noexcept { idle_now.store(idle(), std::memory_order_release); }
};

/// The state behind one stream or acceptor, shared by the I/O object and its
/// operations in flight (an operation keeps its socket's state alive until
/// it completes, so a run never touches freed memory).
class socket_impl : public std::enable_shared_from_this<socket_impl> {
public:
    enum class phase { closed, open, connecting, connected, listening };

    explicit socket_impl(std::uint64_t id) noexcept : id_(id) {}
    ~socket_impl() {
        // Before socket_ closes the descriptor. The service deregisters it at
        // close; this only covers a state that outlives its service's
        // shutdown. (No reactor wait is pending here: each holds this state.)
        reactor_.reset();
        if (blocking_wake_fd_ >= 0)
            ::close(blocking_wake_fd_);
    }

    socket_impl(const socket_impl&) = delete;
    socket_impl& operator=(const socket_impl&) = delete;

    /// Key of this state in the service's registry; never reused.
    const std::uint64_t id_;

    // Guarded by io_mutex_: the socket itself. A run holds the mutex around
    // its nonblocking call, and close() takes it to release the descriptor,
    // so a socket is never closed under a call in progress.
    futex_mutex io_mutex_;
    unique_socket socket_;
    /// The peer's mappings this side may iowrite into, as the application's
    /// protocol told it (add_remote_mapping).
    std::vector<remote_mapping> remote_mappings_;

    /// The known peer mapping that holds `offset`, or null. Call with
    /// io_mutex_ held.
    const remote_mapping* find_remote_mapping(off_t offset) const noexcept {
        for (const auto& m : remote_mappings_)
            if (m.contains(offset, 1))
                return &m;
        return nullptr;
    }

    /// The last nonblocking call of each kind on a non_blocking(true) socket
    /// (try_call), if it said would_block, for the async_wait that usually
    /// comes next: that wait then starts waiting without a look of its own
    /// (wait_operation::perform), as Asio's async_wait does. Sound because
    /// whatever arrives after such a call raises a report: rpoll's readiness
    /// is level-triggered; the service's epoll set (edge-triggered) reports
    /// every edge, and after one that came while nothing waited the next
    /// wait re-arms, which reports what is ready then (epoll_unclaimed_);
    /// the io_context's reactor (edge-triggered)
    /// sees every edge after the last reactor wait of the kind ended, and the
    /// note counts only if no reactor wait of the kind has ended since the
    /// call began (reactor_wait_ends_ unchanged).
    struct would_block_note {
        bool valid = false;
        std::uint32_t reactor_wait_ends = 0;
    };
    std::array<would_block_note, wait_kind_count> would_block_notes_{};

    /// Takes the kind's note: true when it stands, so the socket was not
    /// ready for `kind` at a call made since the last report could have been
    /// missed. Call with io_mutex_ held.
    bool take_would_block_note(wait_kind kind) noexcept {
        auto& note = would_block_notes_[static_cast<std::size_t>(kind)];
        return std::exchange(note.valid, false) &&
               note.reactor_wait_ends == reactor_wait_ends_[static_cast<std::size_t>(kind)].load(
                                             std::memory_order_acquire);
    }

    /// The riomap regions of this socket, as (address, length), so that
    /// close() can unmap them all before it returns: memory the application
    /// frees after close() must not stay registered for the peer's writes.
    /// Guarded by io_mutex_.
    std::vector<std::pair<void*, std::size_t>> local_regions_;

    /// An accepted stream's place in its acceptor's limit on open streams
    /// (detail::accept_admission), given back when the stream closes; null
    /// for other sockets. Touched only at accept and close, never on the
    /// data path.
    std::shared_ptr<void> open_slot_;

    // Set by open, read without a lock by the object's own thread and by
    // operations of that object (Asio's rule: one object, one thread at a time).
    transport transport_ = transport::tcp;
    /// Atomic because close() may come from another thread while a connect
    /// or accept moves it on (Asio allows close() as the one call that may
    /// race an operation): no lock orders those writes, and each stands for
    /// itself. Sequentially consistent, as a plain enum would be expected to
    /// behave; it is never on the data path.
    std::atomic<phase> phase_ = phase::closed;

    // Guarded by the service mutex.
    wait_queue reads_;
    wait_queue writes_;
    /// async_wait(wait_error): its own queue, so that it never holds back
    /// the reads or writes behind it.
    wait_queue errors_;
    /// Which rpoll under way has the descriptor in its set, if any: it must
    /// not be closed until that call returns, and then by that caller.
    enum class poller { none, thread, busy };
    poller in_poll_ = poller::none;
    /// A listening rsocket: rdma-core v44's rpoll may not report a new
    /// connection for up to 5 s, so pending accepts are retried on a tick.
    bool retry_accept_ = false;
    /// An rsocket connect that could not start yet (connect_state::deferred):
    /// its call is made again on the same tick.
    bool retry_connect_ = false;
    /// close() ran: no new waits.
    bool closed_ = false;
    /// Background rshutdowns of this socket under way. v44's rshutdown takes
    /// neither of the socket's own locks and switches its channels to
    /// blocking, so while it runs nothing else may call into the socket:
    /// the poller leaves it out of its set, a run or a first try treats it as
    /// would-block, and a blocking transfer waits. Written under the service
    /// mutex; read under it (poller, blocking waits) or under io_mutex_
    /// (runs), which the shutdown job takes once after raising it so that a
    /// call already under way ends first.
    std::atomic<int> shutting_down_{0};
    /// Blocking read_some/write_some calls waiting in their own rpoll on
    /// this socket's descriptor, and the eventfd that close() signals to
    /// end them (made at the first blocking wait). While any waits, close()
    /// leaves the descriptor to the last of them (blocking_close_), as it
    /// does to a poller: rclose under a live rpoll frees what rpoll reads.
    int blocking_waiters_ = 0;
    int blocking_wake_fd_ = -1;
    unique_socket blocking_close_;
    /// How the service waits for this socket's readiness: rsockets in its
    /// rpoll set (watched_); kernel sockets in the io_context's own reactor
    /// in thread mode on an io_context, else in the service's epoll set.
    /// Chosen at the first wait of each open socket, chosen again when the
    /// mode changed and nothing waits the old way, cleared by close.
    enum class watch_via { none, rpoll, epoll, reactor };
    watch_via watch_ = watch_via::none;
    /// Position in the service's watched_ set, or not_watched.
    static constexpr std::size_t not_watched = static_cast<std::size_t>(-1);
    std::size_t watch_index_ = not_watched;
    /// epoll: the descriptor is registered, edge-triggered, as Asio
    /// registers its own sockets (once, for POLLIN and POLLPRI, POLLOUT
    /// added at the first write wait: epoll_events_), so a wait needs no
    /// epoll_ctl; counted in the service's epoll_waiting_ while a wait wants
    /// it. epoll_unclaimed_: one bit per wait_kind, set when an event of the
    /// kind came while no operation of the kind waited (or an operation of
    /// the kind finished with more queued behind it), cleared when a wait of
    /// the kind ends or re-arms (rpoll_service::update_watch says why).
    bool epoll_registered_ = false;
    short epoll_events_ = 0;
    bool epoll_counted_ = false;
    std::uint8_t epoll_unclaimed_ = 0;
    /// reactor: the descriptor as the io_context's reactor knows it
    /// (registered at the first wait there, deregistered before the
    /// descriptor is closed); for each wait_kind its reusable wait, and
    /// whether that wait is pending (set when it starts, cleared when its
    /// end is handled, which may be after a deregistration ended it).
    /// reactor_refused_: a wait on it ended with an error, so this socket
    /// waits in epoll from now on.
    std::optional<reactor_registration> reactor_;
    reactor_wait_op reactor_waits_[wait_kind_count];
    bool reactor_waiting_[wait_kind_count] = {false, false, false};
    bool reactor_refused_ = false;
    /// How many reactor waits of each kind have ended (on_reactor_wait),
    /// for would_block_note. Written under the service mutex, read under
    /// io_mutex_ without it.
    std::array<std::atomic<std::uint32_t>, wait_kind_count> reactor_wait_ends_{};

    /// The stream's stall timeout (corio::stall_timeout), made by its first
    /// set_option and kept until this state goes: null while never set, so
    /// that a transfer pays one branch for it. Published under the service
    /// mutex; read without a lock by the operations.
    std::atomic<stall_watch*> stall_{nullptr};
    std::unique_ptr<stall_watch> stall_owner_;

    wait_queue& queue(wait_kind kind) noexcept {
        return kind == wait_kind::read ? reads_ : kind == wait_kind::write ? writes_ : errors_;
    }
    /// The kind `q` (one of this socket's queues) waits for.
    wait_kind kind_of(const wait_queue& q) const noexcept {
        return &q == &reads_ ? wait_kind::read : &q == &writes_ ? wait_kind::write : wait_kind::error;
    }
    /// Every queue, for what is done to all of them alike.
    std::array<wait_queue*, wait_kind_count> queues() noexcept { return {&reads_, &writes_, &errors_}; }
    /// The poll events a wait of each kind wants, for this socket's queues
    /// that want a poll now.
    short wanted_events() const noexcept {
        short wanted = 0;
        if (reads_.wants_poll())
            wanted |= POLLIN;
        if (writes_.wants_poll())
            wanted |= POLLOUT;
        if (errors_.wants_poll())
            wanted |= POLLPRI;
        return wanted;
    }

    // The user's settings, read and written by the object's own thread
    // (Asio's rule: one object, one thread at a time).
    /// non_blocking(true): read_some, write_some and iowrite report
    /// would_block instead of waiting.
    bool non_blocking_ = false;
    /// Adaptive waiting (adaptive_spin): what the spins before this
    /// socket's waits of each kind have measured.
    std::array<detail::spin_history, wait_kind_count> spin_histories_{};
    detail::spin_history& spin_history_for(wait_kind kind) noexcept {
        return spin_histories_[static_cast<std::size_t>(kind)];
    }
};

} // namespace corio::detail
