#include "run_until_finished.hpp"

#include <exception>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <corio/rpoll_service.hpp>

#include "transport_under_test.hpp"

namespace corio::test {

std::optional<std::string>
run_until_finished(const std::function<boost::asio::awaitable<void>()>& body,
                   std::chrono::steady_clock::duration deadline) {
    boost::asio::io_context context;
    corio::set_poll_mode(context, poll_mode_under_test());
    std::exception_ptr failure;
    bool finished = false;
    boost::asio::co_spawn(context, body(), [&](std::exception_ptr e) {
        failure = e;
        finished = true;
    });
    context.run_for(deadline);
    if (failure)
        std::rethrow_exception(failure);
    if (finished)
        return std::nullopt;
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline).count();
    return context.stopped() ? "the coroutine is suspended with no work left to resume it"
                             : "the coroutine missed its deadline of " + std::to_string(ms) + " ms";
}

} // namespace corio::test
