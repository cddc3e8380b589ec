#include "landing_probe.hpp"

#include <atomic>

namespace coriostream {

bool landing_probe::transfer_landed() noexcept {
    std::atomic_ref<std::uint8_t> byte(marker_byte_);
    auto seen = byte.load(std::memory_order_relaxed);
    if (seen == marker_) {
        // The last transfer landed: progress once. With --notify message the
        // notice must follow it, and a peer that never sends one (riostream,
        // which only writes the marker) must still meet --timeout.
        const bool first_look = !marker_seen_;
        marker_seen_ = true;
        return first_look;
    }
    const bool overwritten = planted_ && seen != *planted_;
    // Both canaries differ from the marker in one bit: neither can pass
    // for the last transfer.
    const auto canary = static_cast<std::uint8_t>(marker_ ^ (second_canary_ ? 0x40 : 0x80));
    second_canary_ = !second_canary_;
    if (byte.compare_exchange_strong(seen, canary, std::memory_order_relaxed)) {
        planted_ = canary;
        return overwritten;
    }
    // A transfer landed between the read and the exchange; the byte is its
    // (maybe the marker), and no canary is in.
    planted_.reset();
    return true;
}

} // namespace coriostream
