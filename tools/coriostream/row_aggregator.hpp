#pragma once

#include <cstddef>
#include <functional>
#include <mutex>
#include <vector>

#include "report.hpp"
#include "test_plan.hpp"
#include "transfer_timing.hpp"

namespace coriostream {

/// Makes one row out of a test that ran on several connections at once
/// (--streams): the transfers of all of them, over the wall time from the
/// first start to the last end. With one stream it is riostream's row.
///
/// The row counts streams × transfers in its xfers column, so that total,
/// Gb/sec and usec/xfer describe all the streams together.
///
/// @par Thread Safety
/// Shared objects: safe. `on_row` runs under a lock, one row at a time, in
/// the order the rows complete.
class row_aggregator {
public:
    row_aggregator(std::size_t streams, std::function<void(const test_result&)> on_row);

    /// One stream finished test `index` of its connection's plan.
    void record(std::size_t index, const test_case& test, const transfer_timing& timing);

    /// The aggregate of `streams` runs of `test` timed as `span`.
    static test_result combine(const test_case& test, std::size_t streams,
                               const transfer_timing& span);

private:
    struct pending_row {
        std::size_t reported = 0;
        transfer_timing span{};
    };

    std::mutex mutex_;
    const std::size_t streams_;
    std::function<void(const test_result&)> on_row_;
    std::vector<pending_row> rows_;
};

} // namespace coriostream
