#define BOOST_TEST_MODULE futex_mutex
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include <corio/detail/futex_mutex.hpp>

using corio::detail::futex_mutex;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_CASE(contending_threads_never_overlap_and_lose_no_update) {
    // Four threads on two cores: most locks are taken while another thread
    // holds it, so the contended path (sleep, wake one) runs many times.
    futex_mutex mutex;
    long counter = 0;        // guarded: a lost update shows as a short count
    int inside = 0;          // guarded: more than one holder shows as > 1
    std::atomic<bool> overlapped{false};
    constexpr int threads = 4;
    constexpr int rounds = 200000;
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
        workers.emplace_back([&] {
            for (int i = 0; i < rounds; ++i) {
                std::lock_guard lock(mutex);
                if (++inside != 1)
                    overlapped = true;
                ++counter;
                --inside;
            }
        });
    for (auto& w : workers)
        w.join();
    BOOST_TEST(!overlapped.load());
    BOOST_TEST(counter == static_cast<long>(threads) * rounds);
}

BOOST_AUTO_TEST_CASE(a_locker_sleeps_until_the_holder_unlocks) {
    futex_mutex mutex;
    mutex.lock();
    std::atomic<bool> taken{false};
    std::thread locker([&] {
        std::lock_guard lock(mutex);
        taken = true;
    });
    std::this_thread::sleep_for(100ms);
    BOOST_TEST(!taken.load());
    mutex.unlock();
    locker.join();
    BOOST_TEST(taken.load());
    // Free again after a contended hand-over.
    mutex.lock();
    mutex.unlock();
}
