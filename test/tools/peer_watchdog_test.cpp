#define BOOST_TEST_MODULE peer_watchdog
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <functional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>

#include <coriostream/peer_watchdog.hpp>

// Each case runs an io_context for a few times the watchdog's 1 s timeout;
// the margins are whole seconds, so a slow machine (or a sanitizer) only
// makes the checks later, not wrong.

using coriostream::peer_watchdog;
using namespace std::chrono_literals;

namespace {

void run_for(boost::asio::io_context& io, std::chrono::steady_clock::duration how_long) {
    io.restart();
    io.run_for(how_long);
}

} // namespace

BOOST_AUTO_TEST_CASE(no_progress_expires_once) {
    boost::asio::io_context io;
    int expiries = 0;
    peer_watchdog watchdog(io.get_executor(), 1s, [&] { ++expiries; });
    run_for(io, 3s);
    BOOST_TEST(watchdog.expired());
    BOOST_TEST(expiries == 1);
}

BOOST_AUTO_TEST_CASE(a_probe_that_sees_activity_keeps_it_from_expiring) {
    boost::asio::io_context io;
    int expiries = 0;
    int questions = 0;
    peer_watchdog watchdog(io.get_executor(), 1s, [&] { ++expiries; });
    {
        const peer_watchdog::probe_scope probed(watchdog, [&] {
            ++questions;
            return true;
        });
        run_for(io, 3s);
        BOOST_TEST(!watchdog.expired());
        // A check every quarter of the timeout: about 12 in 3 s (a timeout
        // under 4 s once made the interval zero, and the timer spun).
        BOOST_TEST(questions >= 4);
        BOOST_TEST(questions <= 20);
    }
    // The scope has gone, and its probe with it.
    const int asked = questions;
    run_for(io, 3s);
    BOOST_TEST(watchdog.expired());
    BOOST_TEST(expiries == 1);
    BOOST_TEST(questions == asked);
}

BOOST_AUTO_TEST_CASE(a_probe_that_sees_nothing_does_not_delay_expiry) {
    boost::asio::io_context io;
    peer_watchdog watchdog(io.get_executor(), 1s, [] {});
    const peer_watchdog::probe_scope probed(watchdog, [] { return false; });
    const auto start = std::chrono::steady_clock::now();
    while (!watchdog.expired() && std::chrono::steady_clock::now() - start < 10s)
        io.run_one_for(100ms);
    const auto waited_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::steady_clock::now() - start)
                               .count();
    BOOST_TEST(watchdog.expired());
    // Expiry comes one timeout after the start, give or take a check.
    BOOST_TEST(waited_ms >= 750);
    BOOST_TEST(waited_ms < 5000);
}

BOOST_AUTO_TEST_CASE(noted_progress_is_not_asked_about) {
    boost::asio::io_context io;
    int questions = 0;
    peer_watchdog watchdog(io.get_executor(), 1s, [] {});
    const peer_watchdog::probe_scope probed(watchdog, [&] {
        ++questions;
        return false;
    });
    // Progress before every check: the probe is never needed.
    boost::asio::steady_timer noter(io);
    std::function<void()> note_again = [&] {
        watchdog.note_progress();
        noter.expires_after(50ms);
        noter.async_wait([&](const boost::system::error_code& ec) {
            if (!ec)
                note_again();
        });
    };
    note_again();
    run_for(io, 2s);
    BOOST_TEST(!watchdog.expired());
    BOOST_TEST(questions == 0);
}

BOOST_AUTO_TEST_CASE(a_zero_timeout_takes_a_probe_and_never_expires) {
    // --timeout 0 turns the watchdog off: no timer keeps the io_context
    // busy (run_for returns at once, not after 2 s), the probe is never
    // asked, and nothing expires however long the wait.
    boost::asio::io_context io;
    int expiries = 0;
    int questions = 0;
    peer_watchdog watchdog(io.get_executor(), 0s, [&] { ++expiries; });
    const peer_watchdog::probe_scope probed(watchdog, [&] {
        ++questions;
        return false;
    });
    const auto start = std::chrono::steady_clock::now();
    run_for(io, 2s);
    BOOST_TEST((std::chrono::steady_clock::now() - start < 1s));
    BOOST_TEST(!watchdog.expired());
    BOOST_TEST(expiries == 0);
    BOOST_TEST(questions == 0);
}
