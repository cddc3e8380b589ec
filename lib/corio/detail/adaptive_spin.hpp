#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include <corio/detail/rpoll_operation.hpp>

namespace corio::detail {

class socket_impl;

/// Adaptive waiting, as rsockets' own polling_time: before a wait on an
/// rsocket goes to the poller thread (poll_mode::thread), the thread that
/// started it polls that one socket with rpoll, timeout 0, for up to a
/// budget. An active connection's answer usually arrives within it, which
/// saves the hand-off to the poller thread and back (tens of microseconds);
/// an idle one costs the budget once, then its waits skip the spin (see
/// spin_misses_) and cost nothing while the socket stays idle.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: safe; the budget is atomic, and
/// a socket's spin state belongs to the thread running its operations.
class adaptive_spin {
public:
    /// rsockets' own polling_time default: 10 us.
    static constexpr std::chrono::nanoseconds default_budget{std::chrono::microseconds(10)};
    /// Spins in a row that found nothing before a socket counts as idle.
    static constexpr unsigned misses_before_idle = 2;
    /// An idle socket still spins before one wait in this many, so that it
    /// is found again once it is active.
    static constexpr unsigned probe_interval = 64;

    /// Sets the budget of each spin; zero turns spinning off.
    void set_budget(std::chrono::nanoseconds budget) noexcept {
        budget_ns_.store(budget.count() > 0 ? budget.count() : 0, std::memory_order_relaxed);
    }
    std::chrono::nanoseconds budget() const noexcept {
        return std::chrono::nanoseconds(budget_ns_.load(std::memory_order_relaxed));
    }
    /// Whether the poll mode lets waits spin (poll_mode::thread: busy mode
    /// polls on the io_context anyway).
    void set_enabled(bool on) noexcept { enabled_.store(on, std::memory_order_relaxed); }

    /// Polls `impl`'s rsocket for `kind` until it is ready or the budget is
    /// spent; true when it became ready. Call with impl.io_mutex_ held on an
    /// open socket: close() then waits for the spin to end, as it waits for
    /// any call into the socket. False at once for a kernel socket, when
    /// spinning is off, or when the socket counts as idle.
    bool wait_ready(socket_impl& impl, wait_kind kind) const;

private:
    std::atomic<std::int64_t> budget_ns_{default_budget.count()};
    std::atomic<bool> enabled_{true};
};

} // namespace corio::detail
