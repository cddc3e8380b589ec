#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include <boost/asio/awaitable.hpp>

namespace corio::test {

/// Runs `body` on a fresh io_context, in poll_mode_under_test(), for at most
/// `deadline` stretched by CORIO_TEST_TIME_FACTOR (time_factor.hpp).
/// Rethrows what the body threw; returns why it did not finish (it missed
/// the deadline, or is suspended with nothing left to resume it), or
/// nothing when it finished.
std::optional<std::string>
run_until_finished(const std::function<boost::asio::awaitable<void>()>& body,
                   std::chrono::steady_clock::duration deadline);

} // namespace corio::test
