#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>

#include <boost/asio/awaitable.hpp>

#include "failure_latch.hpp"
#include "lockstep_barrier.hpp"
#include "progress_meter.hpp"
#include "report.hpp"
#include "row_aggregator.hpp"
#include "test_plan.hpp"
#include "transfer_timing.hpp"

namespace coriostream {

/// The connections of one side that run one connection_plan together
/// (--streams N): they start every test in lock-step, their timings make one
/// row per test, and the runner waits for all of them before it moves on to
/// the plan's next connection, as riostream connects afresh per series.
///
/// @par Thread Safety
/// Shared objects: safe; every stream runs on its own strand, or all on the
/// one thread of the io_context.
class stream_group {
public:
    /// `on_row` gets each finished row; empty when this side does not report
    /// (the server half of --loopback). A failure recorded in `failures`
    /// releases everyone waiting here.
    stream_group(std::size_t streams, failure_latch& failures, progress_meter& progress,
                 std::function<void(const test_result&)> on_row);

    std::size_t streams() const noexcept { return streams_; }

    /// Returns once every stream has reached test `index`. Throws run_error
    /// when the run failed meanwhile.
    boost::asio::awaitable<void> start_test(std::size_t index, const test_case& test);
    void finish_test(std::size_t index, const test_case& test, const transfer_timing& timing);

    /// A stream is done with its connection (it waits for the others).
    boost::asio::awaitable<void> leave();
    /// For the runner: returns once every stream has left; throws run_error
    /// with the first failure's message when the run failed.
    boost::asio::awaitable<void> wait_all();

private:
    [[noreturn]] void throw_failure() const;

    const std::size_t streams_;
    failure_latch& failures_;
    progress_meter& progress_;
    const bool reports_rows_;
    std::shared_ptr<lockstep_barrier> test_start_;
    std::shared_ptr<lockstep_barrier> all_left_;
    row_aggregator rows_;
    std::mutex mutex_;
    std::size_t tests_started_ = 0;
};

} // namespace coriostream
