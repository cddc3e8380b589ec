#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <corio/basic_stream.hpp>
#include <corio/detail/channel_wire.hpp>
#include <corio/detail/zero_copy_sender_state.hpp>
#include <corio/error.hpp>

namespace corio {

/// The sending end of a zero-copy channel (doc/zero-copy-channel.md) over
/// one corio stream: each message is written with async_iowrite straight
/// into a slot of the receiver's region that the receiver granted (a
/// credit), then announced by a small notify record on the stream. Up to the
/// receiver's slot count of messages may be in flight; a send waits while no
/// credit is left.
///
/// A message must fit one slot: larger ones are refused with
/// boost::asio::error::message_size, and nothing is sent (split them in the
/// application, where the boundaries mean something).
///
/// The stream must have had corio::socket_base::iomap_size set (at least 1)
/// before it connected, on both ends. The sender owns the stream; destroying
/// or closing it closes the stream, and pending operations end with
/// operation_aborted.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: unsafe; one async_send at a time.
template <class Executor = boost::asio::any_io_executor>
class basic_zero_copy_sender {
    using state_type = detail::zero_copy_sender_state<Executor>;

public:
    /// The executor the sender's operations complete on by default.
    using executor_type = Executor;
    /// The stream the channel runs on.
    using next_layer_type = basic_stream<Executor>;

    /// Takes over a connected stream. Nothing is sent until async_handshake.
    explicit basic_zero_copy_sender(basic_stream<Executor> stream)
        : state_(std::make_shared<state_type>(std::move(stream))) {}

    /// Takes over `other`'s stream and credits; `other` may only be destroyed or assigned to.
    basic_zero_copy_sender(basic_zero_copy_sender&&) noexcept = default;
    /// Closes this sender, then takes over `other`'s stream and credits.
    basic_zero_copy_sender& operator=(basic_zero_copy_sender&& other) noexcept {
        if (this != &other) {
            close();
            state_ = std::move(other.state_);
        }
        return *this;
    }

    ~basic_zero_copy_sender() { close(); }

    /// The executor of the stream.
    executor_type get_executor() const noexcept { return state_->stream_.get_executor(); }
    /// The stream the channel runs on, for its endpoints or options.
    next_layer_type& next_layer() noexcept { return state_->stream_; }

    /// How long async_handshake waits for the peer (its hello, and this
    /// side's hello to be taken) before it ends with
    /// boost::asio::error::timed_out and the channel fails: a peer that
    /// connects and then stalls does not hold this side forever. 30 s by
    /// default; zero waits forever. Set it before async_handshake.
    void set_handshake_timeout(std::chrono::steady_clock::duration timeout) noexcept {
        state_->handshake_deadline_.set_timeout(timeout);
    }

    /// The receiver's slots, known after the handshake (0 before).
    std::uint32_t slot_count() const noexcept { return state_->slot_count_; }
    /// The largest message, in bytes: the receiver's slot size, known after the handshake (0
    /// before).
    std::uint32_t slot_size() const noexcept { return state_->slot_size_; }
    /// Credits in hand: how many sends would start at once.
    std::size_t credits() const noexcept { return state_->free_slots_.size(); }

    /// Closes the stream; pending operations end with operation_aborted.
    void close() noexcept {
        if (state_)
            state_->close();
    }

    /// Exchanges hellos with the receiver and learns its region and slots.
    ///
    /// @par Completion Signature
    /// @code void(boost::system::error_code) @endcode
    /// corio::error::protocol_error when the peer is not a corio channel
    /// receiver, corio::error::protocol_version_mismatch when it speaks
    /// another version.
    ///
    /// @par Per-Operation Cancellation
    /// Terminal, partial and total: completes with operation_aborted, and
    /// the channel is then unusable.
    template <class Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_handshake(Token&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
            initiate_async_handshake(state_), token);
    }

    /// Sends one message: waits for a credit if none is left, writes the
    /// bytes into the granted slot, then sends the notify. Completes once
    /// the notify is with the stream; the buffer may be reused then.
    ///
    /// @par Completion Signature
    /// @code void(boost::system::error_code, std::size_t) @endcode
    /// The byte count is the message's size. boost::asio::error::
    /// message_size for a message larger than a slot (nothing sent, the
    /// channel goes on); boost::asio::error::in_progress while another send
    /// is pending; boost::asio::error::not_connected before the handshake;
    /// eof, connection_reset, broken_pipe when the receiver is gone;
    /// corio::error::protocol_error for a credit that breaks the protocol.
    /// Every error but operation_aborted, message_size and in_progress ends
    /// the channel.
    ///
    /// @par Per-Operation Cancellation
    /// Terminal, partial and total, while waiting for a credit, while writing
    /// the message, or before any byte of the notify went out: completes with
    /// operation_aborted, the message is not delivered, and its slot stays
    /// this side's for the next send. Once part of the notify is out, the
    /// rest is sent regardless (24 bytes; the stream would otherwise be cut
    /// mid-record) and the send completes normally.
    template <class Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_send(boost::asio::const_buffer message,
                    Token&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
            initiate_async_send(state_), token, message);
    }

    /// Ends the channel in order: the send side of the stream is shut down,
    /// so the receiver gets every message sent so far and then
    /// boost::asio::error::eof; completes once the receiver's end has closed
    /// too. Closing or destroying the sender instead may lose messages still
    /// in flight: a TCP socket closed with unread data (credits) resets the
    /// connection and drops what it had not sent yet.
    ///
    /// @par Completion Signature
    /// @code void(boost::system::error_code) @endcode
    /// Afterwards every send completes with boost::asio::error::shut_down.
    ///
    /// @par Per-Operation Cancellation
    /// Terminal, partial and total: completes with operation_aborted (the
    /// send side stays shut down).
    template <class Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_shutdown(Token&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
            initiate_async_shutdown(state_), token);
    }

private:
    class handshake_op {
    public:
        explicit handshake_op(std::shared_ptr<state_type> state) : state_(std::move(state)) {}

        template <class Self>
        void operator()(Self& self, boost::system::error_code ec = {}, std::size_t = 0) {
            namespace wire = detail::channel_wire;
            auto& s = *state_;
            switch (stage_) {
            case stage::start:
                self.reset_cancellation_state(boost::asio::enable_total_cancellation());
                result_ = s.failure_             ? s.failure_
                          : s.closed_            ? boost::asio::error::bad_descriptor
                          : s.handshake_started_ ? boost::asio::error::already_started
                                                 : boost::system::error_code{};
                if (result_) {
                    stage_ = stage::finish;
                    boost::asio::post(s.stream_.get_executor(), std::move(self));
                    return;
                }
                s.send_small_records_at_once();
                s.handshake_started_ = true;
                s.hello_out_ = wire::encode({wire::role::sender, 0, 0, 0});
                s.handshake_deadline_.arm([state = state_] {
                    boost::system::error_code ignored;
                    state->stream_.cancel(ignored);
                });
                stage_ = stage::hello_sent;
                boost::asio::async_write(s.stream_, boost::asio::buffer(s.hello_out_),
                                         std::move(self));
                return;
            case stage::hello_sent:
                if (ec)
                    return fail(self, s.handshake_deadline_.outcome(ec));
                stage_ = stage::hello_received;
                boost::asio::async_read(s.stream_, boost::asio::buffer(s.hello_in_),
                                        std::move(self));
                return;
            case stage::hello_received: {
                if (ec)
                    return fail(self, s.handshake_deadline_.outcome(ec));
                wire::hello peer;
                if (const auto e = wire::decode(s.hello_in_, wire::role::receiver, peer))
                    return fail(self, e);
                s.slot_count_ = peer.slot_count;
                s.slot_size_ = peer.slot_size;
                s.region_offset_ = peer.region_offset;
                // The receiver's hello grants every slot.
                s.slot_free_.assign(peer.slot_count, true);
                for (std::uint32_t i = 0; i < peer.slot_count; ++i)
                    s.free_slots_.push_back(i);
                s.stream_.add_remote_mapping(static_cast<off_t>(peer.region_offset),
                                             std::size_t{peer.slot_count} * peer.slot_size);
                s.ready_ = true;
                s.handshake_deadline_.disarm();
                self.complete(boost::system::error_code{});
                return;
            }
            case stage::finish:
                self.complete(result_);
                return;
            }
        }

    private:
        enum class stage { start, hello_sent, hello_received, finish };

        template <class Self>
        void fail(Self& self, const boost::system::error_code& ec) {
            state_->handshake_deadline_.disarm();
            state_->failure_ = ec;
            self.complete(ec);
        }

        std::shared_ptr<state_type> state_;
        stage stage_ = stage::start;
        boost::system::error_code result_;
    };

    class send_op {
    public:
        send_op(std::shared_ptr<state_type> state, boost::asio::const_buffer message)
            : state_(std::move(state)), message_(message) {}

        template <class Self>
        void operator()(Self& self, boost::system::error_code ec = {}, std::size_t n = 0) {
            auto& s = *state_;
            switch (stage_) {
            case stage::start:
                self.reset_cancellation_state(boost::asio::enable_total_cancellation());
                result_ = s.failure_  ? s.failure_
                          : s.closed_ ? boost::asio::error::bad_descriptor
                          : !s.ready_ ? boost::asio::error::not_connected
                          : s.sending_ ? boost::asio::error::in_progress
                          : message_.size() > s.slot_size_
                              ? boost::asio::error::message_size
                              : boost::system::error_code{};
                if (result_) {
                    stage_ = stage::finish;
                    boost::asio::post(s.stream_.get_executor(), std::move(self));
                    return;
                }
                s.sending_ = true;
                return next_credit(self);
            case stage::credit_read:
                s.credit_filled_ += n;
                if (ec)
                    return end(self, ec);
                if (const auto e = s.take_credits()) {
                    s.close();
                    return end(self, e);
                }
                return next_credit(self);
            case stage::written:
                if (ec) {
                    s.return_slot(slot_);
                    return end(self, ec);
                }
                return notify(self);
            case stage::notify_first:
                if (ec) {
                    // Nothing of the notify went out: the message was not
                    // sent, and its slot is still this side's.
                    s.return_slot(slot_);
                    return end(self, ec);
                }
                if (n < s.notify_out_.size()) {
                    // Half a record must not be left on the stream: the rest
                    // goes out whatever cancellation says.
                    stage_ = stage::notify_rest;
                    boost::asio::async_write(
                        s.stream_, boost::asio::buffer(s.notify_out_) + n,
                        boost::asio::bind_cancellation_slot(boost::asio::cancellation_slot(),
                                                            std::move(self)));
                    return;
                }
                return sent(self);
            case stage::notify_rest:
                if (ec)
                    return end(self, ec);
                return sent(self);
            case stage::finish:
                self.complete(result_, 0);
                return;
            }
        }

    private:
        enum class stage { start, credit_read, written, notify_first, notify_rest, finish };

        template <class Self>
        void next_credit(Self& self) {
            auto& s = *state_;
            if (self.cancelled() != boost::asio::cancellation_type::none)
                return end(self, boost::asio::error::operation_aborted);
            if (s.free_slots_.empty()) {
                stage_ = stage::credit_read;
                s.stream_.async_read_some(
                    boost::asio::buffer(s.credit_in_.data() + s.credit_filled_,
                                        s.credit_in_.size() - s.credit_filled_),
                    std::move(self));
                return;
            }
            slot_ = s.take_slot();
            if (message_.size() == 0)
                return notify(self);
            stage_ = stage::written;
            s.stream_.async_iowrite(message_,
                                    static_cast<off_t>(s.region_offset_ +
                                                       std::uint64_t{slot_} * s.slot_size_),
                                    std::move(self));
        }

        template <class Self>
        void notify(Self& self) {
            auto& s = *state_;
            if (self.cancelled() != boost::asio::cancellation_type::none) {
                s.return_slot(slot_);
                return end(self, boost::asio::error::operation_aborted);
            }
            s.notify_out_ = detail::channel_wire::encode_notify(
                slot_, static_cast<std::uint32_t>(message_.size()), s.next_sequence_);
            stage_ = stage::notify_first;
            s.stream_.async_write_some(boost::asio::buffer(s.notify_out_), std::move(self));
        }

        template <class Self>
        void sent(Self& self) {
            ++state_->next_sequence_;
            end(self, {});
        }

        template <class Self>
        void end(Self& self, const boost::system::error_code& ec) {
            auto& s = *state_;
            s.sending_ = false;
            if (ec && ec != boost::asio::error::operation_aborted && !s.failure_)
                s.failure_ = ec;
            self.complete(ec, ec ? 0 : message_.size());
        }

        std::shared_ptr<state_type> state_;
        boost::asio::const_buffer message_;
        stage stage_ = stage::start;
        std::uint32_t slot_ = 0;
        boost::system::error_code result_;
    };

    class shutdown_op {
    public:
        explicit shutdown_op(std::shared_ptr<state_type> state) : state_(std::move(state)) {}

        template <class Self>
        void operator()(Self& self, boost::system::error_code ec = {}, std::size_t = 0) {
            auto& s = *state_;
            switch (stage_) {
            case stage::start:
                self.reset_cancellation_state(boost::asio::enable_total_cancellation());
                result_ = s.failure_   ? s.failure_
                          : s.closed_  ? boost::asio::error::bad_descriptor
                          : !s.ready_  ? boost::asio::error::not_connected
                          : s.sending_ ? boost::asio::error::in_progress
                                       : boost::system::error_code{};
                if (!result_) {
                    s.stream_.shutdown(basic_stream<Executor>::shutdown_send, result_);
                    s.failure_ = boost::asio::error::shut_down;
                }
                if (result_) {
                    stage_ = stage::finish;
                    boost::asio::post(s.stream_.get_executor(), std::move(self));
                    return;
                }
                stage_ = stage::draining;
                return drain(self);
            case stage::draining:
                // Credits still arriving are read and dropped, so that the
                // socket never closes with unread data; eof is the receiver
                // closing its end, which is what this waits for.
                if (ec == boost::asio::error::eof) {
                    self.complete(boost::system::error_code{});
                    return;
                }
                if (ec) {
                    self.complete(ec);
                    return;
                }
                return drain(self);
            case stage::finish:
                self.complete(result_);
                return;
            }
        }

    private:
        enum class stage { start, draining, finish };

        template <class Self>
        void drain(Self& self) {
            auto& s = *state_;
            s.credit_filled_ = 0;
            s.stream_.async_read_some(boost::asio::buffer(s.credit_in_), std::move(self));
        }

        std::shared_ptr<state_type> state_;
        stage stage_ = stage::start;
        boost::system::error_code result_;
    };

    class initiate_async_shutdown {
    public:
        using executor_type = Executor;
        explicit initiate_async_shutdown(std::shared_ptr<state_type> state) noexcept
            : state_(std::move(state)) {}
        executor_type get_executor() const noexcept { return state_->stream_.get_executor(); }

        template <class Handler>
        void operator()(Handler&& handler) const {
            boost::asio::async_compose<Handler, void(boost::system::error_code)>(
                shutdown_op(state_), handler, state_->stream_);
        }

    private:
        std::shared_ptr<state_type> state_;
    };

    class initiate_async_handshake {
    public:
        using executor_type = Executor;
        explicit initiate_async_handshake(std::shared_ptr<state_type> state) noexcept
            : state_(std::move(state)) {}
        executor_type get_executor() const noexcept { return state_->stream_.get_executor(); }

        template <class Handler>
        void operator()(Handler&& handler) const {
            boost::asio::async_compose<Handler, void(boost::system::error_code)>(
                handshake_op(state_), handler, state_->stream_);
        }

    private:
        std::shared_ptr<state_type> state_;
    };

    class initiate_async_send {
    public:
        using executor_type = Executor;
        explicit initiate_async_send(std::shared_ptr<state_type> state) noexcept
            : state_(std::move(state)) {}
        executor_type get_executor() const noexcept { return state_->stream_.get_executor(); }

        template <class Handler>
        void operator()(Handler&& handler, boost::asio::const_buffer message) const {
            boost::asio::async_compose<Handler, void(boost::system::error_code, std::size_t)>(
                send_op(state_, message), handler, state_->stream_);
        }

    private:
        std::shared_ptr<state_type> state_;
    };

    std::shared_ptr<state_type> state_;
};

} // namespace corio
