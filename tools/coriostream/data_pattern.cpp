#include "data_pattern.hpp"

namespace coriostream {

void data_pattern::format(std::span<std::uint8_t> buffer) noexcept {
    for (auto& byte : buffer)
        byte = next_sent_++;
}

std::optional<std::uint64_t> data_pattern::verify(std::span<const std::uint8_t> buffer) noexcept {
    for (const auto byte : buffer) {
        // verify_buf advances its counter before it compares, also for the
        // byte that fails, but not the count of verified bytes.
        if (byte != next_expected_++)
            return verified_bytes_;
        ++verified_bytes_;
    }
    return std::nullopt;
}

} // namespace coriostream
