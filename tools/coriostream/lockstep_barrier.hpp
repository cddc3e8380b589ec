#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

namespace coriostream {

/// A reusable barrier for coroutines that run on different strands, possibly
/// on different threads: each round, every participant waits in
/// arrive_and_wait() until the last one arrives. --streams uses it to start
/// each test on all connections together, and to learn when all are done.
///
/// A run that fails breaks the barrier instead, so that nobody waits for a
/// participant that will never come.
///
/// @par Thread Safety
/// Shared objects: safe. A participant's coroutine must run on a strand (or
/// a single-threaded context): its wake-up is posted there.
class lockstep_barrier {
public:
    explicit lockstep_barrier(std::size_t participants);

    /// Waits for the round to fill. Returns true when everyone arrived,
    /// false when the barrier was or is broken.
    boost::asio::awaitable<bool> arrive_and_wait();

    /// Wakes every waiter with false, now and in all later rounds.
    void break_barrier();

private:
    struct waiter {
        boost::asio::any_io_executor executor;
        boost::asio::steady_timer* wake_up;
    };

    // With mutex_ held: hands the current waiters over for waking.
    std::vector<waiter> take_waiters();
    static void wake(std::vector<waiter> waiters);

    std::mutex mutex_;
    const std::size_t participants_;
    std::size_t arrived_ = 0;
    std::uint64_t round_ = 0;
    bool broken_ = false;
    std::vector<waiter> waiting_;
};

} // namespace coriostream
