#define BOOST_TEST_MODULE background_closer
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <string>
#include <vector>

#include <pthread.h>

#include <boost/asio/error.hpp>

#include <corio/detail/background_closer.hpp>

#include "background_jobs.hpp"

// The closer that runs rsockets' blocking calls off every io_context: jobs of
// one key in order, keys side by side, a bounded number of workers, and a
// failure to start a worker reported, never a lost job or a terminate.

using namespace std::chrono_literals;
namespace detail = corio::detail;

namespace {

/// A gate jobs wait at until the test opens it.
class gate {
public:
    void wait() {
        std::unique_lock lock(mutex_);
        ++waiting_;
        changed_.notify_all();
        changed_.wait(lock, [this] { return open_; });
        --waiting_;
    }
    void open() {
        std::lock_guard lock(mutex_);
        open_ = true;
        changed_.notify_all();
    }
    /// Waits (boundedly) until `n` jobs wait here; returns how many do.
    int await_waiting(int n, std::chrono::milliseconds limit = 10s) {
        std::unique_lock lock(mutex_);
        changed_.wait_for(lock, limit, [&] { return waiting_ >= n; });
        return waiting_;
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    int waiting_ = 0;
    bool open_ = false;
};

/// Waits (boundedly) until no job is queued or running.
bool drained() { return corio::test::wait_for_background_jobs(10s, 1ms); }

void refuse_to_start(std::function<void()>) {
    throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again));
}

} // namespace

BOOST_AUTO_TEST_CASE(jobs_of_one_key_run_in_order_and_other_keys_do_not_wait) {
    gate blocked;
    std::vector<int> order;
    std::mutex order_mutex;
    const auto record = [&](int n) {
        std::lock_guard lock(order_mutex);
        order.push_back(n);
    };
    // Key 1's first job waits at the gate; its second must not overtake it,
    // while key 2's job runs meanwhile.
    BOOST_TEST(!detail::run_in_background(1, [&] {
        blocked.wait();
        record(1);
    }));
    BOOST_TEST(!detail::run_in_background(1, [&] { record(2); }));
    std::atomic<bool> other_ran{false};
    BOOST_TEST(!detail::run_in_background(2, [&] { other_ran = true; }));
    BOOST_TEST_REQUIRE(blocked.await_waiting(1) == 1);
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!other_ran && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(1ms);
    BOOST_TEST(other_ran.load(), "a job of another key waited behind a blocked one");
    {
        std::lock_guard lock(order_mutex);
        BOOST_TEST(order.empty());
    }
    blocked.open();
    BOOST_TEST_REQUIRE(drained());
    BOOST_TEST((order == std::vector<int>{1, 2}));
}

BOOST_AUTO_TEST_CASE(workers_are_bounded_and_every_job_still_runs) {
    // More blocked keys than workers: exactly the bound run at once, the
    // rest wait for a worker and run once the gate opens.
    gate blocked;
    std::atomic<int> finished{0};
    const int jobs = static_cast<int>(detail::max_background_workers) + 16;
    for (int key = 100; key < 100 + jobs; ++key)
        BOOST_TEST(!detail::run_in_background(key, [&] {
            blocked.wait();
            ++finished;
        }));
    BOOST_TEST(blocked.await_waiting(static_cast<int>(detail::max_background_workers)) ==
               static_cast<int>(detail::max_background_workers));
    std::this_thread::sleep_for(100ms);
    BOOST_TEST(blocked.await_waiting(jobs, 0ms) ==
               static_cast<int>(detail::max_background_workers),
               "more workers than the bound");
    blocked.open();
    BOOST_TEST_REQUIRE(drained());
    BOOST_TEST(finished.load() == jobs);
}

BOOST_AUTO_TEST_CASE(a_worker_that_cannot_start_is_an_error_and_the_job_waits_for_the_next) {
    // Let the idle workers of earlier cases end, so that none is left to
    // take the job (they linger 2 s).
    BOOST_TEST_REQUIRE(drained());
    std::this_thread::sleep_for(2500ms);

    const auto previous = detail::set_background_worker_starter(refuse_to_start);
    std::atomic<int> ran{0};
    const auto ec = detail::run_in_background(7, [&] { ++ran; });
    BOOST_TEST((ec == boost::asio::error::try_again), ec.message());
    // A second job of the same key queues behind the first, as before; it
    // must not be lost or wait forever once workers can start again.
    (void)detail::run_in_background(7, [&] { ++ran; });
    std::this_thread::sleep_for(50ms);
    BOOST_TEST(ran.load() == 0);
    BOOST_TEST(detail::background_jobs_pending() == 2u);

    detail::set_background_worker_starter(previous);
    // The next call starts a worker, which takes the stranded jobs too.
    BOOST_TEST(!detail::run_in_background(8, [&] { ++ran; }));
    BOOST_TEST_REQUIRE(drained());
    BOOST_TEST(ran.load() == 3);
}

BOOST_AUTO_TEST_CASE(a_job_that_throws_does_not_take_its_worker_down) {
    BOOST_TEST(!detail::run_in_background(9, [] { throw std::runtime_error("job failed"); }));
    std::atomic<bool> ran{false};
    BOOST_TEST(!detail::run_in_background(9, [&] { ran = true; }));
    BOOST_TEST_REQUIRE(drained());
    BOOST_TEST(ran.load());
}

BOOST_AUTO_TEST_CASE(a_worker_is_named_so_that_tools_tell_it_from_rsockets_threads) {
    std::mutex name_mutex;
    std::string name;
    BOOST_TEST(!detail::run_in_background(7, [&] {
        char buffer[16] = {};
        pthread_getname_np(pthread_self(), buffer, sizeof buffer);
        std::lock_guard lock(name_mutex);
        name = buffer;
    }));
    BOOST_TEST_REQUIRE(drained());
    std::lock_guard lock(name_mutex);
    BOOST_TEST(name == "corio-closer");
}
