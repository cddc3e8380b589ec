#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include <corio/detail/rpoll_operation.hpp>

namespace corio::detail {

class socket_impl;

/// Adaptive waiting, as rsockets' own polling_time: before a wait on an
/// rsocket goes to the poller thread (poll_mode::thread), the thread that
/// started it polls that one socket with rpoll, timeout 0, for a while. An
/// active connection's answer usually arrives within it, which saves the
/// hand-off to the poller thread and back (two wake-ups, tens of
/// microseconds and more under emulation). How long a wait spins follows
/// what the socket's earlier spins measured (spin_history: twice the recent
/// arrival time), within the service's budget; an idle socket costs the
/// budget a few times, then its waits skip the spin but for rare probes.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: safe; the budget is atomic, and
/// a socket's spin history belongs to the thread running its operations.
class adaptive_spin {
public:
    /// The most one wait spins, unless set_budget says otherwise. Chosen by
    /// measurement in the Soft-RoCE guest (doc/performance.md, "The adaptive
    /// wait's budget"): it must exceed one round trip, or every spin misses.
    static constexpr std::chrono::nanoseconds default_budget{std::chrono::microseconds(100)};

    /// Sets the most one wait spins; zero turns spinning off.
    void set_budget(std::chrono::nanoseconds budget) noexcept {
        budget_ns_.store(budget.count() > 0 ? budget.count() : 0, std::memory_order_relaxed);
    }
    std::chrono::nanoseconds budget() const noexcept {
        return std::chrono::nanoseconds(budget_ns_.load(std::memory_order_relaxed));
    }
    /// Whether the poll mode lets waits spin (poll_mode::thread: busy mode
    /// polls on the io_context anyway).
    void set_enabled(bool on) noexcept { enabled_.store(on, std::memory_order_relaxed); }

    /// Polls `impl`'s rsocket for `kind` until it is ready or its spin
    /// (spin_history::next_spin) is spent; true when it became ready. Call with impl.io_mutex_ held on an
    /// open socket: close() then waits for the spin to end, as it waits for
    /// any call into the socket. False at once for a kernel socket, when
    /// spinning is off, or when the socket's history says to skip the spin.
    bool wait_ready(socket_impl& impl, wait_kind kind) const;

    /// A wait of `kind` on `impl` that went to the poller found the socket
    /// ready (its call made progress). Times the wait if the socket was idle
    /// when it started (spin_history::end_unspun_wait). Call with
    /// impl.io_mutex_ held.
    void wait_answered(socket_impl& impl, wait_kind kind) const noexcept;

private:
    std::atomic<std::int64_t> budget_ns_{default_budget.count()};
    std::atomic<bool> enabled_{true};
};

} // namespace corio::detail
