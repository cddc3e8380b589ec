#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include <boost/system/error_code.hpp>

#include <corio/basic_stream.hpp>
#include <corio/detail/channel_wire.hpp>
#include <corio/detail/zero_copy_deadline.hpp>
#include <corio/socket_base.hpp>

namespace corio::detail {

/// What a zero_copy_sender and its operations in flight share: the stream,
/// the receiver's region as its hello described it, the slots this side may
/// write into (its credits), and the credit bytes read so far. Everything
/// runs on the stream's executor (one object, one thread at a time).
template <class Executor>
class zero_copy_sender_state {
public:
    explicit zero_copy_sender_state(basic_stream<Executor> stream) : stream_(std::move(stream)) {}

    /// Notifies and credits are small records the peer waits for: Nagle's
    /// algorithm would hold them back until an ACK (rsockets only record the
    /// option).
    void send_small_records_at_once() noexcept {
        boost::system::error_code ignored;
        stream_.set_option(socket_base::no_delay(true), ignored);
    }

    void close() noexcept {
        closed_ = true;
        boost::system::error_code ignored;
        stream_.close(ignored);
    }

    /// Takes every complete credit record read so far. protocol_error for a
    /// record of another type, with reserved bits, or for a slot that does
    /// not exist or was never taken.
    boost::system::error_code take_credits() {
        namespace wire = channel_wire;
        std::size_t at = 0;
        for (; credit_filled_ - at >= wire::credit_size; at += wire::credit_size) {
            const std::byte* r = credit_in_.data() + at;
            const auto slot = static_cast<std::uint32_t>(wire::get(r + 4, 4));
            if (r[0] != std::byte{static_cast<std::uint8_t>(wire::record_type::credit)} ||
                wire::get(r + 1, 3) != 0 || slot >= slot_count_ || slot_free_[slot])
                return error::protocol_error;
            slot_free_[slot] = true;
            free_slots_.push_back(slot);
        }
        std::copy(credit_in_.begin() + static_cast<std::ptrdiff_t>(at),
                  credit_in_.begin() + static_cast<std::ptrdiff_t>(credit_filled_),
                  credit_in_.begin());
        credit_filled_ -= at;
        return {};
    }

    std::uint32_t take_slot() {
        const std::uint32_t slot = free_slots_.front();
        free_slots_.pop_front();
        slot_free_[slot] = false;
        return slot;
    }

    /// A send that did not notify keeps its slot, first in line for the next.
    void return_slot(std::uint32_t slot) {
        slot_free_[slot] = true;
        free_slots_.push_front(slot);
    }

    basic_stream<Executor> stream_;
    /// The handshake's deadline (set_handshake_timeout).
    zero_copy_deadline handshake_deadline_{stream_.get_executor()};

    std::uint32_t slot_count_ = 0;
    std::uint32_t slot_size_ = 0;
    std::uint64_t region_offset_ = 0;
    std::deque<std::uint32_t> free_slots_;
    std::vector<bool> slot_free_;
    std::uint64_t next_sequence_ = 0;

    channel_wire::hello_bytes hello_out_{};
    channel_wire::hello_bytes hello_in_{};
    /// Credits arrive 8 bytes each; up to 64 are read at once.
    std::array<std::byte, 64 * channel_wire::credit_size> credit_in_{};
    std::size_t credit_filled_ = 0;
    channel_wire::notify_bytes notify_out_{};

    bool handshake_started_ = false;
    bool ready_ = false;
    bool sending_ = false;
    bool closed_ = false;
    /// The channel cannot go on: every later operation reports this.
    boost::system::error_code failure_;
};

} // namespace corio::detail
