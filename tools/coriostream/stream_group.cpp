#include "stream_group.hpp"

#include <utility>

#include "run_error.hpp"

namespace coriostream {

stream_group::stream_group(std::size_t streams, failure_latch& failures,
                           progress_meter& progress,
                           std::function<void(const test_result&)> on_row)
    : streams_(streams), failures_(failures), progress_(progress),
      reports_rows_(static_cast<bool>(on_row)),
      test_start_(std::make_shared<lockstep_barrier>(streams)),
      // The runner waits for the streams as one more participant.
      all_left_(std::make_shared<lockstep_barrier>(streams + 1)),
      rows_(streams, std::move(on_row)) {
    failures_.on_failure([test_start = test_start_, all_left = all_left_] {
        test_start->break_barrier();
        all_left->break_barrier();
    });
}

boost::asio::awaitable<void> stream_group::start_test(std::size_t index, const test_case& test) {
    const bool everyone_arrived = co_await test_start_->arrive_and_wait();
    if (!everyone_arrived)
        throw_failure();
    if (!reports_rows_)
        co_return;
    std::lock_guard lock(mutex_);
    if (index >= tests_started_) {
        // The first stream through starts the row's progress line.
        tests_started_ = index + 1;
        progress_.begin_row(test.name, total_bytes(test) / test.transfer_size * streams_);
    }
}

void stream_group::finish_test(std::size_t index, const test_case& test,
                               const transfer_timing& timing) {
    rows_.record(index, test, timing);
}

boost::asio::awaitable<void> stream_group::leave() {
    const bool everyone_arrived = co_await all_left_->arrive_and_wait();
    if (!everyone_arrived)
        throw_failure();
}

boost::asio::awaitable<void> stream_group::wait_all() {
    const bool everyone_arrived = co_await all_left_->arrive_and_wait();
    if (!everyone_arrived)
        throw_failure();
}

void stream_group::throw_failure() const {
    // The first failure's own message is what the user sees; this one only
    // unwinds the streams that were waiting for it.
    throw run_error(failures_.failed() ? failures_.message() : "stopped");
}

} // namespace coriostream
