#include "primed_rsocket_services.hpp"

#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "run_until_finished.hpp"

namespace corio::test {

primed_rsocket_services::primed_rsocket_services() {
    if (transport_under_test() != corio::transport::rsocket)
        return;
    const auto start = std::chrono::steady_clock::now();
    // The pair is closed as soon as it is made: only the connection counts.
    const auto connect_once = []() -> boost::asio::awaitable<void> { co_await make_stream_pair(); };
    if (const auto reason = run_until_finished(connect_once, std::chrono::seconds(120)))
        throw std::runtime_error("the first rsocket connection: " + *reason);
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start);
    std::printf("rsocket services primed: the first connection took %lld ms\n",
                static_cast<long long>(ms.count()));
    std::fflush(stdout);
}

} // namespace corio::test
