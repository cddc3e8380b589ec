#pragma once

#include <chrono>
#include <cstddef>
#include <functional>

#include <boost/system/error_code.hpp>

namespace corio::detail {

/// Runs blocking rsocket calls (rclose, rshutdown, the priming of
/// librdmacm's service threads) off every io_context.
///
/// Jobs with the same key (a descriptor number) run in order; jobs with
/// different keys run side by side, on a bounded set of worker threads
/// (max_background_workers) that start on demand and end when idle.
/// Serialising all jobs would deadlock inside librdmacm v44: its single
/// connection-manager thread can block reading an event for socket A that
/// only the close of A's peer B will produce, while A's rclose waits for
/// that thread. The bound is far above what that chain needs (one job per
/// socket whose peer lives in the same process).
///
/// The job is always queued. When no worker is running and none can be
/// started (std::thread threw), the returned error says so
/// (resource_unavailable_try_again); the job stays queued and runs as soon
/// as a later call starts a worker, so no descriptor is lost and no later
/// job for its number waits forever behind it.
///
/// The closer is process-wide and never destroyed. At process exit (an
/// atexit handler) it waits at most exit_grace for queued and running jobs,
/// so that the last sends of a closing stream reach the peer, then abandons
/// the rest: workers still in a call run on until the process ends and touch
/// nothing that exit frees.
boost::system::error_code run_in_background(int key, std::function<void()> job);

/// The most worker threads the closer runs at once.
inline constexpr std::size_t max_background_workers = 64;

/// How long process exit waits for background jobs.
inline constexpr std::chrono::milliseconds exit_grace{2000};

/// How many background jobs are queued or running now (for tests and
/// diagnostics).
std::size_t background_jobs_pending() noexcept;

/// How a worker thread is started: runs `body` on a new thread, or throws
/// (std::system_error) when it cannot. The default starts a detached
/// std::thread; tests replace it to see what a failure does. Returns the
/// previous starter.
using background_worker_starter = void (*)(std::function<void()> body);
background_worker_starter set_background_worker_starter(background_worker_starter starter) noexcept;

} // namespace corio::detail
