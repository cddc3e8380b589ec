#define BOOST_TEST_MODULE time_factor
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "run_until_finished.hpp"
#include "time_factor.hpp"

using namespace std::chrono_literals;
using corio::test::run_until_finished;
using corio::test::stretched;
using corio::test::time_factor;

namespace {

/// Sets CORIO_TEST_TIME_FACTOR for one case, and unsets it after.
struct factor_set_to {
    explicit factor_set_to(const char* text) { ::setenv("CORIO_TEST_TIME_FACTOR", text, 1); }
    ~factor_set_to() { ::unsetenv("CORIO_TEST_TIME_FACTOR"); }
    factor_set_to(const factor_set_to&) = delete;
    factor_set_to& operator=(const factor_set_to&) = delete;
};

/// A body that takes 150 ms.
boost::asio::awaitable<void> sleep_150_ms() {
    boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor, 150ms);
    co_await timer.async_wait(boost::asio::use_awaitable);
}

} // namespace

BOOST_AUTO_TEST_CASE(unset_means_one) {
    ::unsetenv("CORIO_TEST_TIME_FACTOR");
    BOOST_TEST(time_factor() == 1.0);
    BOOST_TEST((stretched(10s) == 10s));
}

BOOST_AUTO_TEST_CASE(a_factor_multiplies_a_deadline) {
    const factor_set_to factor("2.5");
    BOOST_TEST(time_factor() == 2.5);
    BOOST_TEST((stretched(10s) == 25s));
}

BOOST_AUTO_TEST_CASE(anything_but_a_number_from_1_to_100_is_refused_by_name) {
    for (const char* bad : {"", "lots", "0", "0.5", "-2", "101", "3x", "inf", "nan", "1e3", " 2",
                            "2.", ".5", "+2", "0x10"}) {
        const factor_set_to factor(bad);
        BOOST_TEST_CONTEXT("CORIO_TEST_TIME_FACTOR='" << bad << "'") {
            BOOST_CHECK_EXCEPTION(time_factor(), std::invalid_argument, [&](const auto& e) {
                return std::string(e.what()) ==
                       "CORIO_TEST_TIME_FACTOR must be a number from 1 to 100, not '" +
                           std::string(bad) + "'";
            });
        }
    }
}

BOOST_AUTO_TEST_CASE(a_body_longer_than_its_deadline_misses_it) {
    ::unsetenv("CORIO_TEST_TIME_FACTOR");
    const auto reason = run_until_finished(sleep_150_ms, 100ms);
    BOOST_TEST_REQUIRE(reason.has_value());
    BOOST_TEST(*reason == "the coroutine missed its deadline of 100 ms");
}

// The same body and deadline, stretched 20 times (2 s): a stall of 1.85 s
// on a loaded machine would still make it fail, and that is the point.
BOOST_AUTO_TEST_CASE(the_factor_stretches_the_deadline_of_a_coroutine_case) {
    const factor_set_to factor("20");
    BOOST_TEST(!run_until_finished(sleep_150_ms, 100ms).has_value());
}

BOOST_AUTO_TEST_CASE(a_stretched_deadline_missed_says_both_deadlines) {
    const factor_set_to factor("1.2");
    const auto reason = run_until_finished(sleep_150_ms, 100ms);
    BOOST_TEST_REQUIRE(reason.has_value());
    BOOST_TEST(*reason ==
               "the coroutine missed its deadline of 120 ms (100 ms times CORIO_TEST_TIME_FACTOR)");
}

BOOST_AUTO_TEST_CASE(a_bad_factor_throws_before_the_body_runs) {
    const factor_set_to factor("lots");
    bool ran = false;
    const auto body = [&]() -> boost::asio::awaitable<void> {
        ran = true;
        co_return;
    };
    BOOST_CHECK_THROW(run_until_finished(body, 100ms), std::invalid_argument);
    BOOST_TEST(!ran);
}
