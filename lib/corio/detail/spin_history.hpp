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
/// Probes alone cannot wake a ping-pong whose two ends are idle together:
/// each answer then comes through the peer's poller thread too, later than
/// any spin, so every probe misses. An idle socket's waits that skip the
/// spin are timed instead (start_unspun_wait, end_unspun_wait): one that was
/// answered within recovery_budgets budgets says the peer answers promptly,
/// and the socket is on trial: its next wait spins recovery_budgets budgets,
/// as long as an answer may take and still count as prompt, and a miss makes
/// it idle again. The trial's spin is the one spin that outlasts the budget:
/// while the peer is idle too, the answer still crosses the peer's poller
/// thread, which alone can take longer than the budget under emulation, so
/// trials of one budget missed whenever both ends were idle and kept them
/// so for a thousand waits and more (doc/performance.md, "Two idle ends").
/// A trial's hit makes the socket active, but the trial stands until a spin
/// within the budget hits: the trial's hit measured the peer's poller, not
/// the connection. A trial that fails doubles the prompt answers in a row
/// the next one needs, up to probe_interval, so that many streams sharing
/// one busy thread (answers prompt, spins still too short) spend at most a
/// trial and two budgets per probe_interval waits beside the probes. A
/// truly idle connection's waits last far longer and leave it idle.
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
    /// An idle socket's unspun wait answered within this many budgets puts
    /// it on trial, and its trial spins as long. Under emulation an answer
    /// that crosses both ends' poller threads takes 1.5 to 7 budgets of
    /// 100 us, half of them within 4 (doc/performance.md).
    static constexpr int recovery_budgets = 4;

    using time_point = std::chrono::steady_clock::time_point;

    /// How long the next wait spins, at most `budget` but for a trial's
    /// spin (at most recovery_budgets budgets); zero: not at all.
    duration next_spin(duration budget) noexcept {
        whole_ = true;
        trial_spin_ = false;
        if (budget <= duration::zero())
            return duration::zero();
        if (trial_spin_next_) {
            trial_spin_next_ = false;
            trial_spin_ = true;
            return recovery_budgets * budget;
        }
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
        if (trial_spin_) {
            // Active again, but what this spin waited for was the peer's
            // poller thread: the estimate starts again (the next spin is the
            // whole budget), and the trial stands until one within it hits.
            arrival_ns_ = 0;
            return;
        }
        on_trial_ = false;
        prompt_answers_needed_ = 1;
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
        if (on_trial_ && idle()) {
            on_trial_ = false;
            prompt_answers_needed_ = std::min(2 * prompt_answers_needed_, probe_interval);
        }
    }

    /// A wait that skipped its spin because the socket is idle went to the
    /// poller at `start`.
    void start_unspun_wait(time_point start) noexcept { unspun_start_ = start; }
    /// Whether such a wait is under way (its end is worth a clock read).
    bool unspun_wait_pending() const noexcept { return unspun_start_ != time_point{}; }
    /// That wait's socket was ready at `end`. A wait that ended in an error
    /// or was cancelled is never ended: the next one's start replaces it.
    void end_unspun_wait(time_point end, duration budget) noexcept {
        const auto waited = end - unspun_start_;
        unspun_start_ = time_point{};
        if (!idle())
            return;
        if (waited > recovery_budgets * budget) {
            prompt_answers_ = 0;
            return;
        }
        if (++prompt_answers_ < prompt_answers_needed_)
            return;
        // On trial: the next wait spins as long as this answer may have
        // taken, and a miss makes the socket idle again.
        prompt_answers_ = 0;
        misses_ = misses_before_idle - 1;
        skipped_ = 0;
        after_miss_ = true;
        on_trial_ = true;
        trial_spin_next_ = true;
    }

    /// Whether the spin next_spin gave last is a trial's (the peer is
    /// waking up, so the spinner should let it have the CPU: adaptive_spin).
    bool trial_spin() const noexcept { return trial_spin_; }
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
    /// When the unspun wait under way started; none: time_point{}.
    time_point unspun_start_{};
    /// Unspun waits in a row answered promptly, and how many a trial needs.
    unsigned prompt_answers_ = 0;
    unsigned prompt_answers_needed_ = 1;
    /// Turned active by prompt answers, not yet confirmed by a hit within
    /// the budget.
    bool on_trial_ = false;
    /// The next spin is the trial's (recovery_budgets budgets).
    bool trial_spin_next_ = false;
    /// The spin next_spin gave last is the trial's.
    bool trial_spin_ = false;
};

} // namespace corio::detail
