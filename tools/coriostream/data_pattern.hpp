#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace coriostream {

/// The bytes `-T v` sends and expects, as rdma-core's common.c makes them:
/// format_buf writes a running byte counter (0, 1, ... 255, 0, ...) into each
/// buffer it is given, and verify_buf checks received buffers against a
/// second counter of its own. Both counters continue from call to call, so
/// peers agree only if they format and verify the same buffers in the same
/// order, which is how riostream and rstream check each other.
///
/// common.c keeps the counters in static variables, one pair per process;
/// here one object is one pair, so that several streams, or the two ends of
/// --loopback, keep theirs apart.
class data_pattern {
public:
    /// common.c's format_buf: fills `buffer` with the next bytes of the
    /// sending counter.
    void format(std::span<std::uint8_t> buffer) noexcept;

    /// common.c's verify_buf: checks `buffer` against the next bytes of the
    /// receiving counter. On a mismatch, returns the position of the wrong
    /// byte counted over every byte verified so far (what verify_buf prints
    /// as "data verification failed byte N"); the counters are then in the
    /// state verify_buf leaves them in, which matters to no one since the
    /// run stops.
    std::optional<std::uint64_t> verify(std::span<const std::uint8_t> buffer) noexcept;

private:
    std::uint8_t next_sent_ = 0;
    std::uint8_t next_expected_ = 0;
    std::uint64_t verified_bytes_ = 0;
};

} // namespace coriostream
