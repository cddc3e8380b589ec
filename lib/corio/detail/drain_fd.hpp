#pragma once

#include <cstdint>

#include <unistd.h>

namespace corio::detail {

/// Reads an eventfd's or a timerfd's counter, so that it stops being
/// readable. Nonblocking descriptors only: an empty one just fails.
inline void drain_fd(int fd) noexcept {
    std::uint64_t count = 0;
    [[maybe_unused]] const auto n = ::read(fd, &count, sizeof count);
}

} // namespace corio::detail
