#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/write.hpp>
#include <boost/system/error_code.hpp>

#include <corio/basic_stream.hpp>
#include <corio/detail/channel_wire.hpp>
#include <corio/detail/zero_copy_deadline.hpp>
#include <corio/detail/credit_sink.hpp>
#include <corio/detail/mapped_region.hpp>
#include <corio/iomap_registration.hpp>
#include <corio/socket_base.hpp>

namespace corio::detail {

/// What a zero_copy_receiver and the messages it handed out share: the
/// stream, the region and its registration, whose slot is where, and the
/// credits waiting to be sent. Lives as long as the receiver or any message.
///
/// Everything here runs on the stream's executor: the receiver's operations
/// by Asio's rule (one object, one thread at a time), and released slots
/// because release_slot dispatches there.
template <class Executor>
class zero_copy_receiver_state final
    : public credit_sink,
      public std::enable_shared_from_this<zero_copy_receiver_state<Executor>> {
public:
    enum class slot_state : std::uint8_t { with_sender, with_application };

    zero_copy_receiver_state(basic_stream<Executor> stream, std::uint32_t slot_count,
                             std::uint32_t slot_size)
        : stream_(std::move(stream)), slot_count_(slot_count), slot_size_(slot_size) {}

    void release_slot(std::uint32_t slot) noexcept override {
        boost::asio::dispatch(stream_.get_executor(),
                              [self = this->shared_from_this(), slot] { self->grant(slot); });
    }

    /// The slot comes back from the application: it goes to the sender.
    void grant(std::uint32_t slot) {
        if (closed_ || failure_ || slot >= slots_.size() ||
            slots_[slot] != slot_state::with_application)
            return;
        slots_[slot] = slot_state::with_sender;
        const auto record = channel_wire::encode_credit(slot);
        pending_credits_.insert(pending_credits_.end(), record.begin(), record.end());
        write_credits();
    }

    /// One write of credits at a time; those released meanwhile go next,
    /// together.
    void write_credits() {
        if (writing_ || pending_credits_.empty() || closed_)
            return;
        writing_ = true;
        writing_credits_.swap(pending_credits_);
        pending_credits_.clear();
        boost::asio::async_write(stream_, boost::asio::buffer(writing_credits_),
                                 [self = this->shared_from_this()](
                                     const boost::system::error_code& ec, std::size_t) {
                                     self->writing_ = false;
                                     self->writing_credits_.clear();
                                     if (ec) {
                                         // The next receive reports how the
                                         // stream ended.
                                         if (!self->failure_ && !self->closed_)
                                             self->failure_ = ec;
                                         return;
                                     }
                                     self->write_credits();
                                 });
    }

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
        (void)registration_.reset();
        stream_.close(ignored);
    }

    std::byte* slot_data(std::uint32_t slot) const noexcept {
        return region_.data() + std::size_t{slot} * slot_size_;
    }

    // Declared first, destroyed last: the memory outlives its registration
    // and the stream.
    mapped_region region_;
    basic_stream<Executor> stream_;
    iomap_registration registration_;
    /// The handshake's deadline (set_handshake_timeout).
    zero_copy_deadline handshake_deadline_{stream_.get_executor()};

    const std::uint32_t slot_count_;
    const std::uint32_t slot_size_;
    std::vector<slot_state> slots_;
    std::uint64_t expected_sequence_ = 0;

    channel_wire::hello_bytes hello_out_{};
    channel_wire::hello_bytes hello_in_{};
    channel_wire::notify_bytes notify_in_{};
    std::size_t notify_filled_ = 0;

    std::vector<std::byte> pending_credits_;
    std::vector<std::byte> writing_credits_;
    bool writing_ = false;

    bool handshake_started_ = false;
    bool ready_ = false;
    bool receiving_ = false;
    bool closed_ = false;
    /// The channel cannot go on: every later operation reports this.
    boost::system::error_code failure_;
};

} // namespace corio::detail
