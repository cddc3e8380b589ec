#include "run_until_finished.hpp"

#include <exception>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <corio/rpoll_service.hpp>

#include "time_factor.hpp"
#include "transport_under_test.hpp"

namespace corio::test {

std::optional<std::string>
run_until_finished(const std::function<boost::asio::awaitable<void>()>& body,
                   std::chrono::steady_clock::duration deadline) {
    // Before anything runs: a bad CORIO_TEST_TIME_FACTOR throws here.
    const auto stretched_deadline = stretched(deadline);
    boost::asio::io_context context;
    corio::set_poll_mode(context, poll_mode_under_test());
    std::exception_ptr failure;
    bool finished = false;
    boost::asio::co_spawn(context, body(), [&](std::exception_ptr e) {
        failure = e;
        finished = true;
    });
    context.run_for(stretched_deadline);
    if (failure)
        std::rethrow_exception(failure);
    if (finished)
        return std::nullopt;
    if (context.stopped())
        return "the coroutine is suspended with no work left to resume it";
    const auto ms = [](auto d) {
        return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
    };
    std::string reason = "the coroutine missed its deadline of " + ms(stretched_deadline) + " ms";
    if (stretched_deadline != deadline)
        reason += " (" + ms(deadline) + " ms times CORIO_TEST_TIME_FACTOR)";
    return reason;
}

} // namespace corio::test
