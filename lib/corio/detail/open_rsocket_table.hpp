#pragma once

#include <array>
#include <atomic>
#include <cstdint>

namespace corio::detail {

/// The rsocket numbers the seam (rsocket_ops.cpp) has open: added once
/// rsocket or raccept gave them out, removed just before they go to rclose.
///
/// v44's data calls (rrecv, rsend, rreadv, rwritev, riowrite, riomap,
/// riounmap) look their socket up in librdmacm's index map without a bounds
/// check, so a number that is not an rsocket crashes them. The seam asks
/// this table first: one load and a mask, where asking librdmacm (a
/// bounds-checked rfcntl F_GETFL) cost about 40 instructions on every call
/// of the data path (doc/performance.md). The table also answers for
/// negative numbers, which that rfcntl would index the map with.
///
/// librdmacm's numbers are its index map's indices, below 2^16
/// (IDX_MAX_INDEX in v44's indexer.h), so a fixed table covers them.
///
/// @par Thread Safety
/// Every member may be called from any thread. A number is added before the
/// seam returns it and removed before its rclose, so librdmacm cannot hand
/// it out again while its bit is still set; a call that finds the bit set
/// is safe unless the socket's owner closes it at the same time, which
/// corio's I/O objects never do (a close takes the socket's io_mutex_,
/// which every call holds).
class open_rsocket_table {
public:
    /// One past the largest number the table can hold.
    static constexpr int capacity = 1 << 16;

    /// Records `s` as open; false, and nothing recorded, for a number outside
    /// [0, capacity).
    bool add(int s) noexcept {
        if (!in_range(s))
            return false;
        word(s).fetch_or(bit(s), std::memory_order_release);
        return true;
    }

    /// `s` is about to be closed (or never was open: then nothing changes).
    void remove(int s) noexcept {
        if (in_range(s))
            word(s).fetch_and(~bit(s), std::memory_order_release);
    }

    /// True while `s` is open through the seam.
    bool contains(int s) const noexcept {
        return in_range(s) && (word(s).load(std::memory_order_acquire) & bit(s)) != 0;
    }

private:
    static constexpr int bits_per_word = 64;

    static bool in_range(int s) noexcept { return s >= 0 && s < capacity; }
    static std::uint64_t bit(int s) noexcept {
        return std::uint64_t{1} << (static_cast<unsigned>(s) % bits_per_word);
    }
    std::atomic<std::uint64_t>& word(int s) noexcept {
        return words_[static_cast<unsigned>(s) / bits_per_word];
    }
    const std::atomic<std::uint64_t>& word(int s) const noexcept {
        return words_[static_cast<unsigned>(s) / bits_per_word];
    }

    std::array<std::atomic<std::uint64_t>, capacity / bits_per_word> words_{};
};

} // namespace corio::detail
