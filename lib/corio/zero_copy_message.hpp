#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include <boost/asio/buffer.hpp>

#include <corio/detail/credit_sink.hpp>

namespace corio {

/// One message a zero_copy_receiver received: a view of the bytes where the
/// sender wrote them, in the receiver's own mapped region, with no copy.
/// While the message lives, its slot is the application's; release() (or the
/// destructor) gives it back to the sender as a credit.
///
/// The view stays valid until release, even if the receiver is destroyed
/// first (the region lives as long as any message from it).
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: unsafe. release() may run on any
/// thread; the credit is sent from the receiver's executor.
class zero_copy_message {
public:
    zero_copy_message() noexcept = default;

    /// What a zero_copy_receiver makes for a received message; applications receive them from
    /// async_receive rather than making them.
    zero_copy_message(std::shared_ptr<detail::credit_sink> owner, std::uint32_t slot,
                      const std::byte* data, std::size_t size, std::uint64_t sequence) noexcept
        : owner_(std::move(owner)), slot_(slot), data_(data), size_(size), sequence_(sequence) {}

    /// Takes over `other`'s slot; `other` is left empty.
    zero_copy_message(zero_copy_message&& other) noexcept
        : owner_(std::move(other.owner_)), slot_(other.slot_),
          data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)),
          sequence_(other.sequence_) {}

    /// Releases this message's slot, then takes over `other`'s.
    zero_copy_message& operator=(zero_copy_message&& other) noexcept {
        if (this != &other) {
            release();
            owner_ = std::move(other.owner_);
            slot_ = other.slot_;
            data_ = std::exchange(other.data_, nullptr);
            size_ = std::exchange(other.size_, 0);
            sequence_ = other.sequence_;
        }
        return *this;
    }

    zero_copy_message(const zero_copy_message&) = delete;
    zero_copy_message& operator=(const zero_copy_message&) = delete;

    ~zero_copy_message() { release(); }

    /// The message's first byte, in the receiver's mapped region; null once released.
    const std::byte* data() const noexcept { return data_; }
    /// The message's size in bytes; 0 once released (an empty message is the sender's empty send).
    std::size_t size() const noexcept { return size_; }
    /// The message as an Asio buffer.
    boost::asio::const_buffer buffer() const noexcept { return {data_, size_}; }

    /// The message's place in the channel's order: 0 for the first.
    std::uint64_t sequence() const noexcept { return sequence_; }
    /// The receiver's slot that holds it.
    std::uint32_t slot() const noexcept { return slot_; }

    /// True until released (or moved from).
    bool holds_slot() const noexcept { return owner_ != nullptr; }

    /// Gives the slot back to the sender; the view is invalid afterwards.
    void release() noexcept {
        if (auto owner = std::move(owner_)) {
            data_ = nullptr;
            size_ = 0;
            owner->release_slot(slot_);
        }
    }

private:
    std::shared_ptr<detail::credit_sink> owner_;
    std::uint32_t slot_ = 0;
    const std::byte* data_ = nullptr;
    std::size_t size_ = 0;
    std::uint64_t sequence_ = 0;
};

} // namespace corio
