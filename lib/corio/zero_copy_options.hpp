#pragma once

#include <cstdint>

namespace corio {

/// How a zero_copy_receiver divides its region. The sender may have
/// slot_count messages in flight; a message may hold up to slot_size bytes.
/// slot_count * slot_size must be between 1 byte and 4 GiB.
struct zero_copy_options {
    /// Slots in the region: how many messages may be in flight at once.
    std::uint32_t slot_count = 16;
    /// Bytes per slot: the largest message.
    std::uint32_t slot_size = 64 * 1024;
};

} // namespace corio
