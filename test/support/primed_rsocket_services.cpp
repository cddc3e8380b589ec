#include "primed_rsocket_services.hpp"

#include <chrono>
#include <cstdio>
#include <exception>
#include <stdexcept>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <corio/rpoll_service.hpp>

namespace corio::test {

primed_rsocket_services::primed_rsocket_services() {
    if (transport_under_test() != corio::transport::rsocket)
        return;
    const auto start = std::chrono::steady_clock::now();
    boost::asio::io_context context;
    corio::set_poll_mode(context, poll_mode_under_test());
    std::exception_ptr failure;
    bool finished = false;
    // The pair is closed as soon as it is made: only the connection counts.
    const auto connect_once = []() -> boost::asio::awaitable<void> { co_await make_stream_pair(); };
    boost::asio::co_spawn(context, connect_once(), [&](std::exception_ptr e) {
        failure = e;
        finished = true;
    });
    context.run_for(std::chrono::seconds(120));
    if (failure)
        std::rethrow_exception(failure);
    if (!finished)
        throw std::runtime_error("the first rsocket connection took over 120 s");
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start);
    std::printf("rsocket services primed: the first connection took %lld ms\n",
                static_cast<long long>(ms.count()));
    std::fflush(stdout);
}

} // namespace corio::test
