#pragma once

#include <chrono>

namespace coriostream {

/// When a test's timed part began and ended on one connection: riostream's
/// start and end, taken with a steady clock instead of gettimeofday.
struct transfer_timing {
    std::chrono::steady_clock::time_point start;
    std::chrono::steady_clock::time_point end;
};

} // namespace coriostream
