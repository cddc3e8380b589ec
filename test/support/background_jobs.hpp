#pragma once

#include <chrono>

#include <boost/asio/awaitable.hpp>

namespace corio::test {

/// Waits until none of corio's background jobs (a priming of rsockets'
/// services, a close: detail::background_jobs_pending()) is queued or
/// running, looking every `interval`, for at most `limit`. True when none
/// is left. Blocks the calling thread; the jobs run on corio's own threads
/// and need no io_context to finish.
bool wait_for_background_jobs(std::chrono::steady_clock::duration limit,
                              std::chrono::steady_clock::duration interval =
                                  std::chrono::milliseconds(10));

/// The same from a coroutine: it sleeps on a timer between looks, so that
/// its io_context goes on running everything else.
boost::asio::awaitable<bool> await_background_jobs(std::chrono::steady_clock::duration limit);

} // namespace corio::test
