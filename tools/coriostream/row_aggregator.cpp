#include "row_aggregator.hpp"

#include <algorithm>
#include <utility>

namespace coriostream {

row_aggregator::row_aggregator(std::size_t streams,
                               std::function<void(const test_result&)> on_row)
    : streams_(streams), on_row_(std::move(on_row)) {}

void row_aggregator::record(std::size_t index, const test_case& test,
                            const transfer_timing& timing) {
    std::lock_guard lock(mutex_);
    if (rows_.size() <= index)
        rows_.resize(index + 1);
    auto& row = rows_[index];
    if (row.reported == 0) {
        row.span = timing;
    } else {
        row.span.start = std::min(row.span.start, timing.start);
        row.span.end = std::max(row.span.end, timing.end);
    }
    if (++row.reported == streams_ && on_row_)
        on_row_(combine(test, streams_, row.span));
}

test_result row_aggregator::combine(const test_case& test, std::size_t streams,
                                    const transfer_timing& span) {
    test_case combined = test;
    combined.transfer_count *= streams;
    // riostream's gettimeofday gives whole microseconds; truncating keeps
    // the table's arithmetic the same.
    return {combined,
            std::chrono::duration_cast<std::chrono::microseconds>(span.end - span.start)};
}

} // namespace coriostream
