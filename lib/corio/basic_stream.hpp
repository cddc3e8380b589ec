#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

#include <sys/socket.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/socket_base.hpp>
#include <boost/system/system_error.hpp>

#include <corio/basic_socket.hpp>
#include <corio/detail/buffer_iovecs.hpp>
#include <corio/detail/connect_operation.hpp>
#include <corio/detail/iowrite_operation.hpp>
#include <corio/detail/socket_control.hpp>
#include <corio/detail/stream_access.hpp>
#include <corio/detail/transfer_operation.hpp>
#include <corio/detail/try_iowrite.hpp>
#include <corio/detail/try_transfer.hpp>
#include <corio/rpoll_service.hpp>
#include <corio/transport.hpp>

namespace corio {

/// A connected byte stream over rsockets or kernel TCP, shaped like
/// boost::asio::basic_stream_socket and usable wherever Asio expects an
/// AsyncReadStream or AsyncWriteStream (asio::async_read, async_write,
/// async_read_until, Boost.Beast).
///
/// The object is a thin handle: its state lives in a detail::socket_impl
/// shared with the operations in flight, and readiness comes from the
/// execution context's rpoll_service.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: unsafe, as with Asio's sockets;
/// use a strand when several threads run the io_context.
///
/// @par Per-Operation Cancellation
/// async_read_some, async_write_some, async_receive, async_send,
/// async_connect and async_wait support terminal, partial and total
/// cancellation: a pending operation completes with
/// boost::asio::error::operation_aborted. An operation that has already
/// moved bytes completes with them instead; bytes are never dropped.
template <class Executor = boost::asio::any_io_executor>
class basic_stream : public basic_socket<boost::asio::ip::tcp, Executor> {
    using base = basic_socket<boost::asio::ip::tcp, Executor>;

public:
    /// The executor the stream's operations complete on by default.
    using typename base::executor_type;
    /// An IP address and port: corio addresses rsockets and kernel sockets alike.
    using typename base::endpoint_type;
    /// The stream itself: it is its own lowest layer, as Asio's sockets are.
    using lowest_layer_type = basic_stream;

    /// The stream type for another executor, as Asio's I/O objects offer.
    template <class OtherExecutor>
    struct rebind_executor {
        /// basic_stream on OtherExecutor.
        using other = basic_stream<OtherExecutor>;
    };

    /// A closed stream. `t` is the transport async_connect opens when the
    /// stream is not open yet.
    explicit basic_stream(const executor_type& executor,
                          corio::transport t = corio::transport::automatic)
        : base(executor, t) {}

    /// A closed stream on `context`'s executor; `t` as for the executor overload.
    template <class ExecutionContext>
        requires std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>
    explicit basic_stream(ExecutionContext& context,
                          corio::transport t = corio::transport::automatic)
        : basic_stream(context.get_executor(), t) {}

    /// Takes over `other`'s socket and pending operations; `other` is left closed.
    basic_stream(basic_stream&& other) noexcept = default;
    /// Closes this stream (pending operations end with operation_aborted), then takes over
    /// `other`'s socket; `other` is left closed.
    basic_stream& operator=(basic_stream&& other) noexcept = default;

    /// Returns this stream (Asio's layered-stream convention).
    basic_stream& lowest_layer() noexcept { return *this; }

    /// Blocking reads and writes, for code that wants no io_context. With
    /// non_blocking(true) each makes one call instead and reports
    /// boost::asio::error::would_block when it would wait (Asio's try-first
    /// pattern, with async_wait).
    template <class MutableBufferSequence>
    std::size_t read_some(const MutableBufferSequence& buffers) {
        boost::system::error_code ec;
        const auto n = read_some(buffers, ec);
        detail::throw_if(ec, "read_some");
        return n;
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    ///
    /// This and the write_some below are always inlined, with transfer(): a
    /// non_blocking(true) call is then the caller's own code up to the seam.
    /// Out of line (GCC's choice, as they hold the blocking path too) their
    /// frames cost about 13 instructions per call (doc/performance.md,
    /// session 20).
    template <class MutableBufferSequence>
    [[gnu::always_inline]] std::size_t read_some(const MutableBufferSequence& buffers,
                                                 boost::system::error_code& ec) {
        return transfer(detail::wait_kind::read, detail::buffer_iovecs(buffers), ec);
    }
    /// Writes at least one byte, blocking the calling thread. Throws boost::system::system_error on
    /// failure.
    template <class ConstBufferSequence>
    std::size_t write_some(const ConstBufferSequence& buffers) {
        boost::system::error_code ec;
        const auto n = write_some(buffers, ec);
        detail::throw_if(ec, "write_some");
        return n;
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    template <class ConstBufferSequence>
    [[gnu::always_inline]] std::size_t write_some(const ConstBufferSequence& buffers,
                                                  boost::system::error_code& ec) {
        return transfer(detail::wait_kind::write, detail::buffer_iovecs(buffers), ec);
    }

    /// Connects to `peer`, opening a socket of the stream's transport first
    /// if none is open (`automatic` unless open() chose).
    ///
    /// @par Completion Signature
    /// @code void(boost::system::error_code) @endcode
    template <class ConnectToken = boost::asio::default_completion_token_t<executor_type>>
    auto async_connect(const endpoint_type& peer,
                       ConnectToken&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return boost::asio::async_initiate<ConnectToken, void(boost::system::error_code)>(
            initiate_async_connect(this), token, peer);
    }

    /// Reads at least one byte, unless the buffers are empty.
    ///
    /// @par Completion Signature
    /// @code void(boost::system::error_code, std::size_t) @endcode
    /// The peer's orderly shutdown gives boost::asio::error::eof.
    template <class MutableBufferSequence,
              class ReadToken = boost::asio::default_completion_token_t<executor_type>>
    auto async_read_some(const MutableBufferSequence& buffers,
                         ReadToken&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return boost::asio::async_initiate<ReadToken, void(boost::system::error_code, std::size_t)>(
            initiate_async_transfer<detail::wait_kind::read>(this), token, buffers);
    }

    /// Writes at least one byte, unless the buffers are empty.
    ///
    /// @par Completion Signature
    /// @code void(boost::system::error_code, std::size_t) @endcode
    template <class ConstBufferSequence,
              class WriteToken = boost::asio::default_completion_token_t<executor_type>>
    auto async_write_some(const ConstBufferSequence& buffers,
                          WriteToken&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return boost::asio::async_initiate<WriteToken, void(boost::system::error_code, std::size_t)>(
            initiate_async_transfer<detail::wait_kind::write>(this), token, buffers);
    }

    // Message calls with flags, as boost::asio::basic_stream_socket has them.
    // `flags` are boost::asio::socket_base::message_flags. Both transports
    // take message_peek on receive: the bytes stay for the next receive (on
    // the framed tcp transport, those of the current data frame; iowrite
    // frames before them land). rsockets carry no other flag (their man page, section 7;
    // v44 ignores the rest in silence), nor does the framed tcp transport:
    // there a flag other than message_peek, and message_peek on send, is
    // refused with operation_not_supported before anything moves. Plain
    // kernel tcp passes every flag to the kernel. With non_blocking(true)
    // the blocking send and receive make one call, as read_some does.

    /// Writes at least one byte with `flags`, blocking the calling thread.
    /// Throws boost::system::system_error on failure.
    template <class ConstBufferSequence>
    std::size_t send(const ConstBufferSequence& buffers,
                     boost::asio::socket_base::message_flags flags = 0) {
        boost::system::error_code ec;
        const auto n = send(buffers, flags, ec);
        detail::throw_if(ec, "send");
        return n;
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    template <class ConstBufferSequence>
    std::size_t send(const ConstBufferSequence& buffers,
                     boost::asio::socket_base::message_flags flags, boost::system::error_code& ec) {
        return transfer(detail::wait_kind::write, detail::buffer_iovecs(buffers), ec, flags);
    }
    /// Reads at least one byte with `flags` (message_peek: leaves them to
    /// be read again), blocking the calling thread. Throws
    /// boost::system::system_error on failure.
    template <class MutableBufferSequence>
    std::size_t receive(const MutableBufferSequence& buffers,
                        boost::asio::socket_base::message_flags flags = 0) {
        boost::system::error_code ec;
        const auto n = receive(buffers, flags, ec);
        detail::throw_if(ec, "receive");
        return n;
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    template <class MutableBufferSequence>
    std::size_t receive(const MutableBufferSequence& buffers,
                        boost::asio::socket_base::message_flags flags,
                        boost::system::error_code& ec) {
        return transfer(detail::wait_kind::read, detail::buffer_iovecs(buffers), ec, flags);
    }

    /// async_write_some under Asio's other name.
    ///
    /// @par Completion Signature
    /// @code void(boost::system::error_code, std::size_t) @endcode
    template <class ConstBufferSequence,
              boost::asio::completion_token_for<void(boost::system::error_code, std::size_t)>
                  WriteToken = boost::asio::default_completion_token_t<executor_type>>
    auto async_send(const ConstBufferSequence& buffers,
                    WriteToken&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return async_send(buffers, 0, std::forward<WriteToken>(token));
    }
    /// Writes at least one byte with `flags`, unless the buffers are empty.
    ///
    /// @par Completion Signature
    /// @code void(boost::system::error_code, std::size_t) @endcode
    /// operation_not_supported for a flag the transport cannot carry.
    ///
    /// @par Per-Operation Cancellation
    /// As async_write_some.
    template <class ConstBufferSequence,
              class WriteToken = boost::asio::default_completion_token_t<executor_type>>
    auto async_send(const ConstBufferSequence& buffers,
                    boost::asio::socket_base::message_flags flags,
                    WriteToken&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return boost::asio::async_initiate<WriteToken, void(boost::system::error_code, std::size_t)>(
            initiate_async_transfer<detail::wait_kind::write>(this), token, buffers, flags);
    }
    /// async_read_some under Asio's other name.
    ///
    /// @par Completion Signature
    /// @code void(boost::system::error_code, std::size_t) @endcode
    template <class MutableBufferSequence,
              boost::asio::completion_token_for<void(boost::system::error_code, std::size_t)>
                  ReadToken = boost::asio::default_completion_token_t<executor_type>>
    auto async_receive(const MutableBufferSequence& buffers,
                       ReadToken&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return async_receive(buffers, 0, std::forward<ReadToken>(token));
    }
    /// Reads at least one byte with `flags`, unless the buffers are empty;
    /// with message_peek the bytes stay to be read again.
    ///
    /// @par Completion Signature
    /// @code void(boost::system::error_code, std::size_t) @endcode
    /// The peer's orderly shutdown gives boost::asio::error::eof;
    /// operation_not_supported for a flag the transport cannot carry.
    ///
    /// @par Per-Operation Cancellation
    /// As async_read_some.
    template <class MutableBufferSequence,
              class ReadToken = boost::asio::default_completion_token_t<executor_type>>
    auto async_receive(const MutableBufferSequence& buffers,
                       boost::asio::socket_base::message_flags flags,
                       ReadToken&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return boost::asio::async_initiate<ReadToken, void(boost::system::error_code, std::size_t)>(
            initiate_async_transfer<detail::wait_kind::read>(this), token, buffers, flags);
    }

    /// Tells the stream that the peer mapped [offset, offset + length) for
    /// this side to iowrite into. rsockets keep the peer's mappings to
    /// themselves, so the application says what its protocol agreed; an
    /// iowrite outside every mapping declared here is refused before it
    /// reaches rdma-core. Declare no more than the peer really mapped: v44's
    /// riowrite spins for ever, inside the call, on a write that crosses the
    /// end of the peer's real mapping (it ends only when the connection
    /// does), and only the declaration here keeps writes inside.
    void add_remote_mapping(off_t offset, std::size_t length) {
        auto* impl = live();
        std::lock_guard io_lock(impl->io_mutex_);
        impl->remote_mappings_.push_back({offset, length});
    }

    /// Forgets every declared peer mapping (the peer unmapped them).
    void clear_remote_mappings() {
        auto* impl = live();
        std::lock_guard io_lock(impl->io_mutex_);
        impl->remote_mappings_.clear();
    }

    /// Writes `buffer` into the peer's memory at `remote_offset` (rsockets'
    /// riowrite), all of it. The peer is not told: riowrite data is ordered
    /// with the stream, so a message sent after this completes tells the
    /// peer that the bytes have landed.
    ///
    /// @par Completion Signature
    /// @code void(boost::system::error_code, std::size_t) @endcode
    /// corio::error::no_remote_mapping when no mapping declared with
    /// add_remote_mapping holds `remote_offset`, or when rsockets know none
    /// there; corio::error::iowrite_out_of_bounds when the write would cross
    /// the end of the mapping; corio::error::not_supported_by_transport on a
    /// tcp stream.
    ///
    /// @par Per-Operation Cancellation
    /// Terminal, partial and total: completes with operation_aborted and the
    /// count of bytes already written.
    template <class WriteToken = boost::asio::default_completion_token_t<executor_type>>
    auto async_iowrite(boost::asio::const_buffer buffer, off_t remote_offset,
                       WriteToken&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return boost::asio::async_initiate<WriteToken, void(boost::system::error_code, std::size_t)>(
            initiate_async_iowrite(this), token, buffer, remote_offset);
    }

    /// async_iowrite's synchronous counterpart: writes all of `buffer`,
    /// waiting on this thread when the peer's side has no room. With
    /// non_blocking(true) it stops when a call would block instead and
    /// returns the bytes written so far (boost::asio::error::would_block
    /// when none): write the rest later, after async_wait(wait_write).
    /// Errors as for async_iowrite. Throws boost::system::system_error on
    /// failure.
    std::size_t iowrite(boost::asio::const_buffer buffer, off_t remote_offset) {
        boost::system::error_code ec;
        const auto n = iowrite(buffer, remote_offset, ec);
        detail::throw_if(ec, "iowrite");
        return n;
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    // Always inlined, as transfer() is: a non-blocking iowrite is then one
    // call from the caller to the seam.
    [[gnu::always_inline]] std::size_t iowrite(boost::asio::const_buffer buffer,
                                               off_t remote_offset,
                                               boost::system::error_code& ec) {
        auto& impl = *live();
        if (buffer.size() == 0) {
            ec.clear();
            return 0;
        }
        if (impl.non_blocking_)
            return detail::try_iowrite(impl, buffer.data(), buffer.size(), remote_offset, ec);
        return detail::blocking_iowrite(*service_, impl, buffer.data(), buffer.size(),
                                        remote_offset, ec);
    }

private:
    friend struct detail::stream_access;

    // Always inlined, as try_transfer is: each of read_some, write_some,
    // receive and send is then one call from the caller to the seam.
    [[gnu::always_inline]] std::size_t transfer(detail::wait_kind kind,
                                                const detail::buffer_iovecs& iov,
                                                boost::system::error_code& ec, int flags = 0) {
        auto& impl = *live();
        if (impl.non_blocking_)
            return detail::try_transfer(impl, kind, iov.data(), iov.count(), iov.total_size(), ec,
                                        flags);
        return detail::blocking_transfer(*service_, impl, kind, iov.data(), iov.count(),
                                         iov.total_size(), ec, flags);
    }

    class initiate_async_iowrite {
    public:
        using executor_type = Executor;
        explicit initiate_async_iowrite(basic_stream* self) noexcept : self_(self) {}
        executor_type get_executor() const noexcept { return self_->get_executor(); }

        template <class Handler>
        void operator()(Handler&& handler, boost::asio::const_buffer buffer, off_t offset) const {
            using op_type = detail::iowrite_operation<std::decay_t<Handler>, Executor>;
            op_type::start(op_type::create(op_type::allocator_for(handler), *self_->service_,
                                           self_->impl_shared(), buffer, offset,
                                           std::forward<Handler>(handler), self_->executor_));
        }

    private:
        basic_stream* self_;
    };

    class initiate_async_connect {
    public:
        using executor_type = Executor;
        explicit initiate_async_connect(basic_stream* self) noexcept : self_(self) {}
        executor_type get_executor() const noexcept { return self_->get_executor(); }

        template <class Handler>
        void operator()(Handler&& handler, const endpoint_type& peer) const {
            using op_type = detail::connect_operation<std::decay_t<Handler>, Executor>;
            auto* op = op_type::create(op_type::allocator_for(handler), *self_->service_,
                                       self_->impl_shared(), std::forward<Handler>(handler),
                                       self_->executor_, peer);
            auto state = detail::connect_state::finished;
            const auto ec = detail::start_connect(*self_->service_, *self_->impl_,
                                                  self_->transport_preference_, peer, state);
            op->set_result(ec, state);
            if (state == detail::connect_state::finished)
                op_type::finish(op);
            else
                op_type::start_waiting(op);
        }

    private:
        basic_stream* self_;
    };

    template <detail::wait_kind Kind>
    class initiate_async_transfer {
    public:
        using executor_type = Executor;
        explicit initiate_async_transfer(basic_stream* self) noexcept : self_(self) {}
        executor_type get_executor() const noexcept { return self_->get_executor(); }

        // Inlined into the coroutine's initiation, where GCC 12 put it until
        // a field more in rpoll_operation tipped its size estimate: called
        // out of line it costs about 20 instructions a transfer more
        // (callgrind, test/bench/compare instructions).
        template <class Handler, class BufferSequence>
        [[gnu::always_inline]] void operator()(Handler&& handler, const BufferSequence& buffers,
                                               int flags = 0) const {
            using op_type =
                detail::transfer_operation<Kind, BufferSequence, std::decay_t<Handler>, Executor>;
            op_type::start(op_type::create(op_type::allocator_for(handler), *self_->service_,
                                           self_->impl_shared(), buffers,
                                           std::forward<Handler>(handler), self_->executor_,
                                           flags));
        }

    private:
        basic_stream* self_;
    };

    using base::impl_;
    using base::impl_shared;
    using base::live;
    using base::service_;
};

} // namespace corio
