#pragma once

#include <boost/asio/awaitable.hpp>

#include "test_plan.hpp"
#include "transfer_timing.hpp"

namespace coriostream {

/// How one test moves its bytes over a connected stream: riostream's
/// riowrite into the peer's mapping (iomap_data_path) or rstream's
/// rsend/rrecv, in stream_data_path. Each speaks its tool's protocol exactly,
/// so that either end may be rdma-core's program.
class data_path {
public:
    virtual ~data_path() = default;

    /// Runs `test` once, as the tool's run_test does: the untimed handshake,
    /// then the timed iterations. Throws run_error.
    virtual boost::asio::awaitable<transfer_timing> run_test(const test_case& test) = 0;
};

} // namespace coriostream
