#include "background_jobs.hpp"

#include <thread>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <corio/detail/background_closer.hpp>

namespace corio::test {

bool wait_for_background_jobs(std::chrono::steady_clock::duration limit,
                              std::chrono::steady_clock::duration interval) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (detail::background_jobs_pending() > 0) {
        if (std::chrono::steady_clock::now() >= deadline)
            return false;
        std::this_thread::sleep_for(interval);
    }
    return true;
}

boost::asio::awaitable<bool> await_background_jobs(std::chrono::steady_clock::duration limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
    while (detail::background_jobs_pending() > 0) {
        if (std::chrono::steady_clock::now() >= deadline)
            co_return false;
        timer.expires_after(std::chrono::milliseconds(10));
        co_await timer.async_wait(boost::asio::use_awaitable);
    }
    co_return true;
}

} // namespace corio::test
