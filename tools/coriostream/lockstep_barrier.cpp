#include "lockstep_barrier.hpp"

#include <utility>

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>

namespace coriostream {

lockstep_barrier::lockstep_barrier(std::size_t participants) : participants_(participants) {}

boost::asio::awaitable<bool> lockstep_barrier::arrive_and_wait() {
    const auto executor = co_await boost::asio::this_coro::executor;
    // Never expires: only a cancel, posted by whoever completes the round or
    // breaks the barrier, wakes it.
    boost::asio::steady_timer wake_up(executor, boost::asio::steady_timer::time_point::max());
    std::uint64_t my_round = 0;
    {
        std::unique_lock lock(mutex_);
        if (broken_)
            co_return false;
        if (++arrived_ == participants_) {
            arrived_ = 0;
            ++round_;
            auto waiters = take_waiters();
            lock.unlock();
            wake(std::move(waiters));
            co_return true;
        }
        my_round = round_;
        // The cancel that wakes this coroutine is posted to its own strand,
        // so it cannot run before the wait below has started.
        waiting_.push_back({executor, &wake_up});
    }
    boost::system::error_code ignored;
    co_await wake_up.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ignored));
    std::lock_guard lock(mutex_);
    // A round that completed before the break still counts as completed.
    co_return round_ != my_round;
}

void lockstep_barrier::break_barrier() {
    std::unique_lock lock(mutex_);
    if (broken_)
        return;
    broken_ = true;
    auto waiters = take_waiters();
    lock.unlock();
    wake(std::move(waiters));
}

std::vector<lockstep_barrier::waiter> lockstep_barrier::take_waiters() {
    return std::exchange(waiting_, {});
}

void lockstep_barrier::wake(std::vector<waiter> waiters) {
    for (const auto& w : waiters)
        boost::asio::post(w.executor, [timer = w.wake_up] { timer->cancel(); });
}

} // namespace coriostream
