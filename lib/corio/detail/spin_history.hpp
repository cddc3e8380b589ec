#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace corio::detail {

/// What adaptive waiting (adaptive_spin) has learnt of one socket's waits,
/// and how long its next wait spins. A spin is worth its time only when the
/// answer arrives before it ends, so the spin follows the arrival time it
/// measures: twice the recent arrival time of the spins that found the
/// socket ready, within the service's budget. An active connection then
/// spins about one round trip of this host and no longer, whatever the
/// budget.
///
/// Answers vary: one that comes after a short spin has ended is no sign
/// that the connection has gone quiet, so after a miss each wait spins the
/// whole budget until one hits. Only spins of the whole budget that miss count towards idleness:
/// after misses_before_idle of them in a row the socket counts as idle and
/// its waits skip the spin, but for one in probe_interval, which spins the
/// whole budget so that the socket is found again once it is active.
/// (Counting short misses made both ends of a ping-pong turn idle together
/// whenever one answer was late: each end's slower answers then made the
/// other's spins miss.)
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: unsafe; a socket's history
/// belongs to the thread that spins on it (under its io_mutex_).
class spin_history {
public:
    using duration = std::chrono::nanoseconds;

    /// Whole-budget spins in a row that found nothing before the socket
    /// counts as idle.
    static constexpr unsigned misses_before_idle = 2;
    /// An idle socket still spins before one wait in this many.
    static constexpr unsigned probe_interval = 64;
    /// The shortest spin: one look at the socket costs about a microsecond
    /// under emulation, so a shorter spin would be a single look.
    static constexpr duration min_spin{std::chrono::microseconds(1)};

    /// How long the next wait spins, at most `budget`; zero: not at all.
    duration next_spin(duration budget) noexcept {
        whole_ = true;
        if (budget <= duration::zero())
            return duration::zero();
        if (misses_ >= misses_before_idle) {
            if (++skipped_ < probe_interval)
                return duration::zero();
            skipped_ = 0;
            return budget;
        }
        if (arrival_ns_ == 0 || after_miss_)
            return budget;
        const auto spin = std::clamp(duration(2 * arrival_ns_), std::min(min_spin, budget), budget);
        whole_ = spin == budget;
        return spin;
    }

    /// The spin found the socket ready after `waited`.
    void hit(duration waited) noexcept {
        misses_ = 0;
        skipped_ = 0;
        after_miss_ = false;
        // Never zero: zero means nothing measured yet.
        const std::int64_t ns = std::max<std::int64_t>(waited.count(), 1);
        // A moving average over about the last four hits: one late answer
        // does not double the spins that follow.
        arrival_ns_ = arrival_ns_ == 0 ? ns : (3 * arrival_ns_ + ns) / 4;
    }

    /// The spin next_spin gave ended with nothing ready.
    void miss() noexcept {
        // The estimate was wrong: spin the whole budget until a hit.
        after_miss_ = true;
        if (whole_ && misses_ < misses_before_idle)
            ++misses_;
    }

    /// Whether the socket counts as idle (its waits skip the spin but for
    /// the probes).
    bool idle() const noexcept { return misses_ >= misses_before_idle; }
    /// The arrival time the next spin follows; zero before the first hit.
    duration arrival() const noexcept { return duration(arrival_ns_); }

private:
    std::int64_t arrival_ns_ = 0;
    unsigned misses_ = 0;
    unsigned skipped_ = 0;
    /// The last spin given was the whole budget.
    bool whole_ = true;
    /// The last spin missed: the next one is the whole budget.
    bool after_miss_ = false;
};

} // namespace corio::detail
