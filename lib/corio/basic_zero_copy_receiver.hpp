#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include <sys/mman.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <corio/basic_stream.hpp>
#include <corio/detail/channel_wire.hpp>
#include <corio/detail/zero_copy_receiver_state.hpp>
#include <corio/error.hpp>
#include <corio/zero_copy_message.hpp>
#include <corio/zero_copy_options.hpp>

namespace corio {

/// The receiving end of a zero-copy channel (doc/zero-copy-channel.md) over
/// one corio stream: it maps a region split into slots, grants the slots to
/// the sender as credits, and hands out each message the sender riowrote as
/// a zero_copy_message, a view into the region with no copy. Releasing the
/// message grants its slot again.
///
/// The stream must have had corio::socket_base::iomap_size set (at least 1)
/// before it connected, on both ends; on tcp that turns on the framed
/// emulation of riowrite, doc/tcp-transport.md.
///
/// The receiver owns the stream; destroying or closing it closes the
/// stream, and pending operations end with operation_aborted. Messages still
/// held keep the region alive until they are released.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: unsafe; one async_receive at a
/// time. Messages may be released on any thread.
template <class Executor = boost::asio::any_io_executor>
class basic_zero_copy_receiver {
    using state_type = detail::zero_copy_receiver_state<Executor>;

public:
    /// The executor the receiver's operations complete on by default.
    using executor_type = Executor;
    /// The stream the channel runs on.
    using next_layer_type = basic_stream<Executor>;

    /// Takes over a connected stream. Nothing is sent until async_handshake.
    explicit basic_zero_copy_receiver(basic_stream<Executor> stream,
                                      const zero_copy_options& options = {})
        : state_(std::make_shared<state_type>(std::move(stream), options.slot_count,
                                              options.slot_size)) {}

    /// Takes over `other`'s stream and region; `other` may only be destroyed or assigned to.
    basic_zero_copy_receiver(basic_zero_copy_receiver&&) noexcept = default;
    /// Closes this receiver, then takes over `other`'s stream and region.
    basic_zero_copy_receiver& operator=(basic_zero_copy_receiver&& other) noexcept {
        if (this != &other) {
            close();
            state_ = std::move(other.state_);
        }
        return *this;
    }

    /// Closes the stream; pending operations end with operation_aborted.
    ~basic_zero_copy_receiver() { close(); }

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

    /// How many slots the region has: the most messages the sender may have in flight.
    std::uint32_t slot_count() const noexcept { return state_->slot_count_; }
    /// The largest message, in bytes: the size of one slot.
    std::uint32_t slot_size() const noexcept { return state_->slot_size_; }

    /// Closes the stream; pending operations end with operation_aborted.
    void close() noexcept {
        if (state_)
            state_->close();
    }

    /// Maps the region, then exchanges hellos with the sender: this side's
    /// offers the region and grants every slot.
    ///
    /// @par Completion Signature
    /// @code void(boost::system::error_code) @endcode
    /// corio::error::protocol_error when the peer is not a corio channel
    /// sender, corio::error::protocol_version_mismatch when it speaks another
    /// version, boost::asio::error::invalid_argument for a slot count or size
    /// of zero or a region above 4 GiB, and the mapping's error (for example
    /// corio::error::not_supported_by_transport on a tcp stream without
    /// iomap_size).
    ///
    /// @par Per-Operation Cancellation
    /// Terminal, partial and total: completes with operation_aborted, and
    /// the channel is then unusable (the hellos may be half exchanged).
    template <class Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_handshake(Token&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
            initiate_async_handshake(state_), token);
    }

    /// Waits for the next message.
    ///
    /// @par Completion Signature
    /// @code void(boost::system::error_code, corio::zero_copy_message) @endcode
    /// Messages come in the order they were sent. boost::asio::error::eof
    /// after the last message when the sender ended the channel with
    /// async_shutdown (this side's stream then shuts down its send side
    /// too, which completes that shutdown), or when it is gone
    /// (connection_reset too); corio::error::
    /// protocol_error when its notify breaks the protocol (the stream is then
    /// closed); boost::asio::error::in_progress while another receive is
    /// pending; boost::asio::error::not_connected before the handshake. Every
    /// error but operation_aborted and in_progress ends the channel.
    ///
    /// @par Per-Operation Cancellation
    /// Terminal, partial and total: completes with operation_aborted. A
    /// notify record read in part is kept for the next receive, so nothing
    /// is lost.
    template <class Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_receive(Token&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return boost::asio::async_initiate<Token,
                                           void(boost::system::error_code, zero_copy_message)>(
            initiate_async_receive(state_), token);
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
                result_ = prepare();
                if (result_) {
                    // Never complete inside the initiation.
                    stage_ = stage::finish;
                    boost::asio::post(s.stream_.get_executor(), std::move(self));
                    return;
                }
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
                if (const auto e = wire::decode(s.hello_in_, wire::role::sender, peer))
                    return fail(self, e);
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

        boost::system::error_code prepare() {
            namespace wire = detail::channel_wire;
            auto& s = *state_;
            if (s.failure_)
                return s.failure_;
            if (s.closed_)
                return boost::asio::error::bad_descriptor;
            if (s.handshake_started_)
                return boost::asio::error::already_started;
            const std::uint64_t size = std::uint64_t{s.slot_count_} * s.slot_size_;
            if (size == 0 || size > wire::max_region)
                return boost::asio::error::invalid_argument;
            s.send_small_records_at_once();
            s.handshake_started_ = true;
            if (const auto ec = s.region_.allocate(static_cast<std::size_t>(size)))
                return s.failure_ = ec;
            boost::system::error_code ec;
            // -1: the transport chooses the offset (rsockets: the address).
            s.registration_ = iomap_registration(
                s.stream_, boost::asio::buffer(s.region_.data(), s.region_.size()), PROT_WRITE,
                -1, ec);
            if (ec)
                return s.failure_ = ec;
            s.slots_.assign(s.slot_count_, state_type::slot_state::with_sender);
            s.hello_out_ = wire::encode(
                {wire::role::receiver, s.slot_count_, s.slot_size_,
                 static_cast<std::uint64_t>(s.registration_.offset())});
            return {};
        }

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

    class receive_op {
    public:
        explicit receive_op(std::shared_ptr<state_type> state) : state_(std::move(state)) {}

        template <class Self>
        void operator()(Self& self, boost::system::error_code ec = {}, std::size_t n = 0) {
            auto& s = *state_;
            switch (stage_) {
            case stage::start:
                self.reset_cancellation_state(boost::asio::enable_total_cancellation());
                result_ = s.failure_        ? s.failure_
                          : s.closed_       ? boost::asio::error::bad_descriptor
                          : !s.ready_       ? boost::asio::error::not_connected
                          : s.receiving_    ? boost::asio::error::in_progress
                                            : boost::system::error_code{};
                if (result_) {
                    stage_ = stage::finish;
                    boost::asio::post(s.stream_.get_executor(), std::move(self));
                    return;
                }
                s.receiving_ = true;
                stage_ = stage::reading;
                return read_more(self);
            case stage::reading:
                s.notify_filled_ += n;
                if (ec) {
                    s.receiving_ = false;
                    if (ec != boost::asio::error::operation_aborted && !s.failure_)
                        s.failure_ = ec;
                    if (ec == boost::asio::error::eof) {
                        // The sender's async_shutdown: end this direction
                        // too, which is what its shutdown waits for. Credits
                        // are of no use to it any more.
                        boost::system::error_code ignored;
                        s.stream_.shutdown(basic_stream<Executor>::shutdown_send, ignored);
                    }
                    self.complete(ec, zero_copy_message());
                    return;
                }
                if (s.notify_filled_ < s.notify_in_.size()) {
                    if (self.cancelled() != boost::asio::cancellation_type::none) {
                        s.receiving_ = false;
                        self.complete(boost::asio::error::operation_aborted, zero_copy_message());
                        return;
                    }
                    return read_more(self);
                }
                s.notify_filled_ = 0;
                s.receiving_ = false;
                return deliver(self);
            case stage::finish:
                self.complete(result_, zero_copy_message());
                return;
            }
        }

    private:
        enum class stage { start, reading, finish };

        template <class Self>
        void read_more(Self& self) {
            auto& s = *state_;
            s.stream_.async_read_some(
                boost::asio::buffer(s.notify_in_.data() + s.notify_filled_,
                                    s.notify_in_.size() - s.notify_filled_),
                std::move(self));
        }

        template <class Self>
        void deliver(Self& self) {
            namespace wire = detail::channel_wire;
            auto& s = *state_;
            // The checks live in channel_wire, where test/fuzz reaches them.
            wire::notify n;
            const bool valid =
                !wire::decode_notify(s.notify_in_, n) &&
                wire::admissible(n, s.slot_count_, s.slot_size_, s.expected_sequence_,
                                 [&s](std::uint32_t slot) {
                                     return s.slots_[slot] == state_type::slot_state::with_sender;
                                 });
            if (!valid) {
                s.failure_ = error::protocol_error;
                s.close();
                self.complete(s.failure_, zero_copy_message());
                return;
            }
            s.slots_[n.slot] = state_type::slot_state::with_application;
            ++s.expected_sequence_;
            self.complete(boost::system::error_code{},
                          zero_copy_message(state_, n.slot, s.slot_data(n.slot),
                                            static_cast<std::size_t>(n.length), n.sequence));
        }

        std::shared_ptr<state_type> state_;
        stage stage_ = stage::start;
        boost::system::error_code result_;
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

    class initiate_async_receive {
    public:
        using executor_type = Executor;
        explicit initiate_async_receive(std::shared_ptr<state_type> state) noexcept
            : state_(std::move(state)) {}
        executor_type get_executor() const noexcept { return state_->stream_.get_executor(); }

        template <class Handler>
        void operator()(Handler&& handler) const {
            boost::asio::async_compose<Handler,
                                       void(boost::system::error_code, zero_copy_message)>(
                receive_op(state_), handler, state_->stream_);
        }

    private:
        std::shared_ptr<state_type> state_;
    };

    std::shared_ptr<state_type> state_;
};

} // namespace corio
