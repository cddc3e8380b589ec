#include "coroutine_test.hpp"

#include <exception>
#include <string>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <corio/rpoll_service.hpp>

#include "transport_under_test.hpp"

namespace corio::test {

void run_coroutine(const std::function<boost::asio::awaitable<void>()>& body,
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
    if (!finished) {
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline).count();
        const std::string reason =
            context.stopped() ? "the coroutine is suspended with no work left to resume it"
                              : "the coroutine missed its deadline of " + std::to_string(ms) + " ms";
        BOOST_FAIL(reason);
    }
    if (failure)
        std::rethrow_exception(failure);
}

} // namespace corio::test
