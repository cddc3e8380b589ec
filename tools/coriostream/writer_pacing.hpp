#pragma once

#include <cstddef>

#include "thread_sharing.hpp"

namespace coriostream {

/// When a bandwidth row's writer lets the thread go to its peer: with
/// --loopback on fewer threads than halves (thread_sharing::
/// peer_on_these_threads), the reading half runs only when the writing half
/// waits or yields. A writer that went on until its socket would block
/// filled the reader's TCP window first, and then, for some transfer sizes,
/// Linux sent no window update when the reader emptied its queue: the
/// writer waited for TCP's persist timer, about 200 ms, again and again
/// (--loopback's 12k_bw row 30 times slower than 8k_bw and 16k_bw, 10 KiB
/// to 14 KiB stream rows 15-100 times; doc/performance.md, session 43).
/// Yielding after every bytes_between_turns bytes keeps the window open; a
/// writer whose peers are elsewhere never yields here.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: unsafe.
class writer_pacing {
public:
    /// Written bytes between two turns of the peer: well under the window
    /// Linux opens on the loopback with its default buffers, and few turns
    /// for small transfers (one per 4,096 transfers of 64 bytes). 64 KiB
    /// and 128 KiB kept the window open too, but cost the 4k_bw row 30 %
    /// and 20 %: each turn is a pass through the reactor.
    static constexpr std::size_t bytes_between_turns = 256 * 1024;

    explicit writer_pacing(thread_sharing sharing) noexcept
        : active_(sharing == thread_sharing::peer_on_these_threads) {}

    /// Whether the writer's peer is on its threads; a row's loop asks once.
    bool active() const noexcept { return active_; }

    /// After a write of `bytes` that did not wait: true when the writer
    /// should yield to its peer now.
    bool turn_due(std::size_t bytes) noexcept {
        written_ += bytes;
        if (written_ < bytes_between_turns)
            return false;
        written_ = 0;
        return true;
    }

    /// The writer waited, so its peer has had the thread.
    void peer_had_turn() noexcept { written_ = 0; }

private:
    bool active_;
    std::size_t written_ = 0;
};

} // namespace coriostream
