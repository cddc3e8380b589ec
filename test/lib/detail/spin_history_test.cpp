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
    BOOST_TEST((history.next_spin(100us) == 100us));
    // A hit confirms it: the spins follow the arrival again.
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
        BOOST_TEST((history.next_spin(100us) == 100us));
        history.miss(); // one whole-budget miss ends the trial
        BOOST_TEST(history.idle());
        needed = std::min(2 * needed, spin_history::probe_interval);
    }
    BOOST_TEST(needed == spin_history::probe_interval);
}

BOOST_AUTO_TEST_CASE(a_slow_answer_breaks_a_run_of_prompt_ones) {
    spin_history history;
    make_idle(history);
    prompt_answer(history);
    BOOST_TEST((history.next_spin(100us) == 100us));
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
