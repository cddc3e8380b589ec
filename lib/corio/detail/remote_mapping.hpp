#pragma once

#include <cstddef>

#include <sys/types.h>

namespace corio::detail {

/// The extent of one mapping the peer published with riomap, as this side
/// knows it. iowrite checks every write against it before calling riowrite,
/// since rdma-core cannot be trusted to reject a write that does not fit.
struct remote_mapping {
    off_t offset = 0;
    std::size_t length = 0;

    /// True when [at, at + count) lies inside the mapping.
    constexpr bool contains(off_t at, std::size_t count) const noexcept {
        if (at < offset)
            return false;
        const auto start = static_cast<std::size_t>(at - offset);
        return start <= length && count <= length - start;
    }
};

} // namespace corio::detail
