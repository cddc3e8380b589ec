#include "coroutine_test.hpp"

#include "run_until_finished.hpp"

namespace corio::test {

void run_coroutine(const std::function<boost::asio::awaitable<void>()>& body,
                   std::chrono::steady_clock::duration deadline) {
    if (const auto reason = run_until_finished(body, deadline))
        BOOST_FAIL(*reason);
}

} // namespace corio::test
