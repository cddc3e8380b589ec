#define BOOST_TEST_MODULE spin_history
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>

#include <corio/detail/spin_history.hpp>

using corio::detail::spin_history;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_CASE(a_socket_with_nothing_measured_spins_the_whole_budget) {
    spin_history history;
    BOOST_TEST((history.next_spin(100us) == 100us));
    BOOST_TEST((history.next_spin(0ns) == 0ns));
    BOOST_TEST((history.arrival() == 0ns));
}

BOOST_AUTO_TEST_CASE(the_spin_follows_twice_the_measured_arrival_within_the_budget) {
    spin_history history;
    history.hit(20us);
    BOOST_TEST((history.arrival() == 20us));
    BOOST_TEST((history.next_spin(100us) == 40us));
    // The budget still bounds it.
    BOOST_TEST((history.next_spin(30us) == 30us));
    // A moving average: one late answer moves it a quarter of the way.
    history.hit(60us);
    BOOST_TEST((history.arrival() == 30us));
    BOOST_TEST((history.next_spin(100us) == 60us));
}

BOOST_AUTO_TEST_CASE(a_spin_never_shrinks_below_the_minimum_or_to_nothing) {
    spin_history history;
    history.hit(0ns); // ready at the first look
    BOOST_TEST((history.arrival() == 1ns));
    BOOST_TEST((history.next_spin(100us) == spin_history::min_spin));
    // A budget below the minimum is still the bound.
    BOOST_TEST((history.next_spin(500ns) == 500ns));
}

BOOST_AUTO_TEST_CASE(a_short_spin_that_misses_is_followed_by_the_whole_budget) {
    spin_history history;
    history.hit(10us);
    BOOST_TEST((history.next_spin(100us) == 20us));
    history.miss(); // the answer came later than twice the estimate
    BOOST_TEST(!history.idle());
    BOOST_TEST((history.next_spin(100us) == 100us));
    history.hit(50us); // (3 * 10 + 50) / 4
    BOOST_TEST((history.arrival() == 20us));
    BOOST_TEST((history.next_spin(100us) == 40us));
}

BOOST_AUTO_TEST_CASE(short_misses_alone_never_make_a_socket_idle) {
    spin_history history;
    history.hit(10us);
    for (int i = 0; i < 100; ++i) {
        // A short spin that misses, then a whole one that hits.
        BOOST_TEST((history.next_spin(100us) < 100us));
        history.miss();
        BOOST_TEST((history.next_spin(100us) == 100us));
        history.hit(10us);
    }
    BOOST_TEST(!history.idle());
}

BOOST_AUTO_TEST_CASE(misses_in_a_row_make_the_socket_idle_until_a_probe_hits) {
    spin_history history;
    history.hit(10us);
    // A short spin that misses does not count; whole-budget ones do.
    BOOST_TEST((history.next_spin(100us) == 20us));
    history.miss();
    for (unsigned i = 0; i < spin_history::misses_before_idle; ++i) {
        BOOST_TEST(!history.idle());
        BOOST_TEST((history.next_spin(100us) == 100us));
        history.miss();
    }
    BOOST_TEST(history.idle());
    // Idle: every wait skips the spin but one in probe_interval, which
    // spins the whole budget.
    for (unsigned round = 0; round < 3; ++round) {
        for (unsigned i = 1; i < spin_history::probe_interval; ++i)
            BOOST_TEST((history.next_spin(100us) == 0ns));
        BOOST_TEST((history.next_spin(100us) == 100us));
        if (round < 2)
            history.miss(); // a probe that misses keeps it idle
    }
    BOOST_TEST(history.idle());
    history.hit(5us);
    BOOST_TEST(!history.idle());
    BOOST_TEST((history.next_spin(100us) > 0ns));
}

BOOST_AUTO_TEST_CASE(a_socket_that_never_answers_within_the_budget_turns_idle_at_once) {
    spin_history history;
    for (unsigned i = 0; i < spin_history::misses_before_idle; ++i) {
        BOOST_TEST((history.next_spin(100us) == 100us));
        history.miss();
    }
    BOOST_TEST(history.idle());
    BOOST_TEST((history.next_spin(100us) == 0ns));
}

namespace {
// Makes `history` idle: whole-budget spins that miss, in a row.
void make_idle(spin_history& history) {
    for (unsigned i = 0; i < spin_history::misses_before_idle; ++i) {
        BOOST_TEST((history.next_spin(100us) == 100us));
        history.miss();
    }
    BOOST_TEST(history.idle());
}
} // namespace

BOOST_AUTO_TEST_CASE(an_idle_socket_answered_promptly_through_the_poller_spins_again) {
    // Both ends of a ping-pong idle together: every answer crosses the peer's
    // poller thread too, later than a spin, so probes alone never wake it.
    spin_history history;
    make_idle(history);
    BOOST_TEST((history.next_spin(100us) == 0ns));
    const spin_history::time_point start{1s};
    history.start_unspun_wait(start);
    BOOST_TEST(history.unspun_wait_pending());
    history.end_unspun_wait(start + 150us, 100us);
    BOOST_TEST(!history.unspun_wait_pending());
    BOOST_TEST(!history.idle());
    // The trial spins as long as a prompt answer may take.
    BOOST_TEST((history.next_spin(100us) == spin_history::recovery_budgets * 100us));
    // Its hit measured the peer's poller: the estimate starts again.
    history.hit(120us);
    BOOST_TEST(!history.idle());
    BOOST_TEST((history.arrival() == 0ns));
    BOOST_TEST((history.next_spin(100us) == 100us));
    // A hit within the budget confirms it: the spins follow the arrival again.
    history.hit(20us);
    BOOST_TEST((history.next_spin(100us) == 40us));
}

namespace {
// One unspun wait of an idle socket, answered after `waited`.
void prompt_answer(spin_history& history, std::chrono::nanoseconds waited = 150us) {
    auto spin = history.next_spin(100us);
    if (spin > 0ns) {
        // This wait was the idle socket's probe, which missed.
        history.miss();
        spin = history.next_spin(100us);
    }
    BOOST_TEST((spin == 0ns));
    const spin_history::time_point start{1s};
    history.start_unspun_wait(start);
    history.end_unspun_wait(start + waited, 100us);
}
} // namespace

BOOST_AUTO_TEST_CASE(a_trial_that_misses_makes_it_idle_and_the_next_trial_wait_longer) {
    // Many streams on one busy thread: answers come promptly through the
    // poller, but later than a spin. Failed trials must not cost a spin per
    // few waits.
    spin_history history;
    make_idle(history);
    unsigned needed = 1;
    for (unsigned trial = 0; trial < 10; ++trial) {
        for (unsigned i = 1; i < needed; ++i) {
            prompt_answer(history);
            BOOST_TEST(history.idle());
        }
        prompt_answer(history);
        BOOST_TEST(!history.idle());
        BOOST_TEST((history.next_spin(100us) == spin_history::recovery_budgets * 100us));
        history.miss(); // one miss of the trial's spin ends the trial
        BOOST_TEST(history.idle());
        needed = std::min(2 * needed, spin_history::probe_interval);
    }
    BOOST_TEST(needed == spin_history::probe_interval);
}

BOOST_AUTO_TEST_CASE(a_slow_answer_breaks_a_run_of_prompt_ones) {
    spin_history history;
    make_idle(history);
    prompt_answer(history);
    BOOST_TEST((history.next_spin(100us) == spin_history::recovery_budgets * 100us));
    history.miss(); // the trial fails: the next needs two prompt answers
    prompt_answer(history);
    prompt_answer(history, 1ms);
    prompt_answer(history);
    BOOST_TEST(history.idle());
    prompt_answer(history);
    BOOST_TEST(!history.idle());
}

BOOST_AUTO_TEST_CASE(an_idle_socket_whose_answer_took_long_stays_idle) {
    spin_history history;
    make_idle(history);
    const spin_history::time_point start{1s};
    history.start_unspun_wait(start);
    history.end_unspun_wait(start + spin_history::recovery_budgets * 100us + 1ns, 100us);
    BOOST_TEST(!history.unspun_wait_pending());
    BOOST_TEST(history.idle());
    BOOST_TEST((history.next_spin(100us) == 0ns));
}

BOOST_AUTO_TEST_CASE(a_timed_wait_changes_nothing_on_an_active_socket) {
    spin_history history;
    history.hit(10us);
    history.start_unspun_wait(spin_history::time_point{1s});
    history.end_unspun_wait(spin_history::time_point{1s} + 1us, 100us);
    BOOST_TEST(!history.idle());
    // Still following the measured arrival, not reset to the whole budget.
    BOOST_TEST((history.next_spin(100us) == 20us));
}

BOOST_AUTO_TEST_CASE(only_the_first_wait_of_a_trial_outlasts_the_budget) {
    spin_history history;
    make_idle(history);
    prompt_answer(history, 40us);
    BOOST_TEST(!history.trial_spin());
    // The budget of the spin itself counts, if it changed meanwhile.
    BOOST_TEST((history.next_spin(50us) == spin_history::recovery_budgets * 50us));
    BOOST_TEST(history.trial_spin());
    history.hit(150us);
    BOOST_TEST((history.next_spin(50us) == 50us));
    BOOST_TEST(!history.trial_spin());
    history.miss();
    BOOST_TEST((history.next_spin(50us) == 50us));
    BOOST_TEST(!history.trial_spin());
}

BOOST_AUTO_TEST_CASE(a_trial_hit_alone_does_not_end_the_trial) {
    // Many streams on one thread: the trial's long spin hits, the spins
    // within the budget after it miss. That is a failed trial: the next one
    // needs twice the prompt answers.
    spin_history history;
    make_idle(history);
    prompt_answer(history, 300us);
    BOOST_TEST((history.next_spin(100us) == 400us));
    history.hit(300us);
    BOOST_TEST(!history.idle());
    make_idle(history);
    prompt_answer(history, 300us);
    BOOST_TEST(history.idle());
    prompt_answer(history, 300us);
    BOOST_TEST(!history.idle());
    BOOST_TEST((history.next_spin(100us) == 400us));
    // Confirmed by a hit within the budget: the next trial needs one again.
    history.hit(300us);
    BOOST_TEST((history.next_spin(100us) == 100us));
    history.hit(20us);
    BOOST_TEST((history.next_spin(100us) == 40us));
    history.miss(); // a short miss, before the whole ones that make it idle
    make_idle(history);
    prompt_answer(history, 300us);
    BOOST_TEST(!history.idle());
}

namespace {
using std::chrono::nanoseconds;

// One end of a modelled ping-pong: each end sends, then waits for the
// other's answer, spinning as its history says. An answer that finds the end
// spinning is taken at once; otherwise the end's poller thread hands it over
// `hand_off` later.
struct modelled_end {
    spin_history history;
    nanoseconds wait_start{};
    nanoseconds spin{};
    unsigned hits = 0;

    void start_wait(nanoseconds at) {
        wait_start = at;
        spin = history.next_spin(100us);
        if (spin == 0ns && history.idle())
            history.start_unspun_wait(spin_history::time_point{at});
    }
    // The answer reaches this end at `arrival`: when it is taken.
    nanoseconds take(nanoseconds arrival, nanoseconds hand_off) {
        if (spin > 0ns) {
            if (arrival <= wait_start + spin) {
                history.hit(arrival - wait_start);
                ++hits;
                return arrival;
            }
            history.miss();
            return arrival + hand_off;
        }
        const auto taken = arrival + hand_off;
        if (history.unspun_wait_pending())
            history.end_unspun_wait(spin_history::time_point{taken}, 100us);
        return taken;
    }
};

// Runs `messages` messages of a ping-pong, `wire` each way; returns when the last was taken.
nanoseconds ping_pong(modelled_end& a, modelled_end& b, unsigned messages, nanoseconds wire,
                      nanoseconds hand_off, nanoseconds start) {
    nanoseconds sent = start;
    modelled_end* ends[] = {&a, &b};
    for (unsigned i = 0; i < messages; ++i) {
        modelled_end& to = *ends[(i + 1) % 2];
        sent = to.take(sent + wire, hand_off);
        to.start_wait(sent);
    }
    return sent;
}
} // namespace

BOOST_AUTO_TEST_CASE(two_idle_ends_whose_poller_outlasts_the_budget_find_each_other) {
    // Under emulation a poller thread's hand-off takes longer than the
    // budget (150 us against 100): while both ends are idle, a trial of one
    // budget always missed, and the two stayed idle. The trial's longer
    // spin catches the idle peer's answer; then both turn active.
    modelled_end a;
    modelled_end b;
    make_idle(a.history);
    make_idle(b.history);
    a.start_wait(0ns);
    b.start_wait(0ns);
    auto t = ping_pong(a, b, 40, 10us, 150us, 0ns);
    BOOST_TEST(!a.history.idle());
    BOOST_TEST(!b.history.idle());
    a.hits = b.hits = 0;
    const auto begin = t;
    t = ping_pong(a, b, 200, 10us, 150us, t);
    BOOST_TEST(a.hits == 100u);
    BOOST_TEST(b.hits == 100u);
    // A round trip is two wires, as when both spin.
    BOOST_TEST((t - begin == 200 * 10us));
}

BOOST_AUTO_TEST_CASE(answers_too_slow_for_any_spin_cost_a_bounded_share_of_spinning) {
    // Many streams on one thread: every answer takes 300 us however the end
    // waits. Spins cannot help; over many waits they must cost at most a
    // trial, two budgets and a probe per probe_interval waits.
    spin_history history;
    nanoseconds spent{};
    constexpr unsigned waits = 100 * spin_history::probe_interval;
    for (unsigned i = 0; i < waits; ++i) {
        const auto spin = history.next_spin(100us);
        spent += std::min<nanoseconds>(spin, 300us);
        if (spin >= 300us) {
            history.hit(300us);
        } else if (spin > 0ns) {
            history.miss();
        } else {
            const spin_history::time_point start{1s};
            if (history.idle())
                history.start_unspun_wait(start);
            if (history.unspun_wait_pending())
                history.end_unspun_wait(start + 300us, 100us);
        }
    }
    BOOST_TEST(history.idle());
    const auto per_probe_interval = spin_history::recovery_budgets * 100us + 2 * 100us + 100us;
    // The first trials, before the prompt answers they need reach probe_interval.
    const auto warm_up = 7 * per_probe_interval;
    BOOST_TEST((spent <= (waits / spin_history::probe_interval) * per_probe_interval + warm_up));
}
