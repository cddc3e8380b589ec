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

#include <corio/detail/buffer_iovecs.hpp>
#include <corio/detail/connect_operation.hpp>
#include <corio/detail/iowrite_operation.hpp>
#include <corio/detail/socket_control.hpp>
#include <corio/detail/stream_access.hpp>
#include <corio/detail/transfer_operation.hpp>
#include <corio/rpoll_service.hpp>
#include <corio/transport.hpp>

namespace corio {

namespace detail {
inline void throw_if(const boost::system::error_code& ec, const char* what) {
    if (ec)
        throw boost::system::system_error(ec, what);
}
} // namespace detail

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
/// async_read_some, async_write_some and async_connect support terminal,
/// partial and total cancellation: a pending operation completes with
/// boost::asio::error::operation_aborted. An operation that has already
/// moved bytes completes with them instead; bytes are never dropped.
template <class Executor = boost::asio::any_io_executor>
class basic_stream {
public:
    /// The executor the stream's operations complete on by default.
    using executor_type = Executor;
    /// An IP address and port: corio addresses rsockets and kernel sockets alike.
    using endpoint_type = boost::asio::ip::tcp::endpoint;
    /// An rsocket number (rsocket transport) or a kernel file descriptor (tcp).
    using native_handle_type = int;
    /// Which directions shutdown() ends, as boost::asio::socket_base's.
    using shutdown_type = boost::asio::socket_base::shutdown_type;
    /// The stream itself: it is its own lowest layer, as Asio's sockets are.
    using lowest_layer_type = basic_stream;
    /// shutdown(): no more receiving.
    static constexpr shutdown_type shutdown_receive = boost::asio::socket_base::shutdown_receive;
    /// shutdown(): no more sending; the peer reads eof.
    static constexpr shutdown_type shutdown_send = boost::asio::socket_base::shutdown_send;
    /// shutdown(): both directions.
    static constexpr shutdown_type shutdown_both = boost::asio::socket_base::shutdown_both;

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
        : transport_preference_(t), executor_(executor),
          service_(&rpoll_service_of(executor)),
          impl_(service_->create_impl()) {}

    /// A closed stream on `context`'s executor; `t` as for the executor overload.
    template <class ExecutionContext>
        requires std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>
    explicit basic_stream(ExecutionContext& context,
                          corio::transport t = corio::transport::automatic)
        : basic_stream(context.get_executor(), t) {}

    /// Takes over `other`'s socket and pending operations; `other` is left closed.
    basic_stream(basic_stream&& other) noexcept
        : transport_preference_(other.transport_preference_), executor_(other.executor_),
          service_(other.service_), impl_(std::exchange(other.impl_, nullptr)) {}

    /// Closes this stream (pending operations end with operation_aborted), then takes over
    /// `other`'s socket; `other` is left closed.
    basic_stream& operator=(basic_stream&& other) noexcept {
        if (this != &other) {
            release();
            transport_preference_ = other.transport_preference_;
            executor_ = other.executor_;
            service_ = other.service_;
            impl_ = std::exchange(other.impl_, nullptr);
        }
        return *this;
    }

    basic_stream(const basic_stream&) = delete;
    basic_stream& operator=(const basic_stream&) = delete;

    /// Closes the socket; pending operations end with operation_aborted.
    ~basic_stream() { release(); }

    /// The executor given at construction.
    executor_type get_executor() const noexcept { return executor_; }
    /// Returns this stream (Asio's layered-stream convention).
    basic_stream& lowest_layer() noexcept { return *this; }

    /// Opens a socket of `t` for `protocol`, without connecting. Needed only
    /// to set options (the RDMA ones) before async_connect, which otherwise
    /// opens the socket itself.
    void open(corio::transport t = corio::transport::automatic,
              const boost::asio::ip::tcp& protocol = boost::asio::ip::tcp::v4()) {
        boost::system::error_code ec;
        open(t, protocol, ec);
        detail::throw_if(ec, "open");
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    void open(corio::transport t, const boost::asio::ip::tcp& protocol,
              boost::system::error_code& ec) {
        transport_preference_ = t;
        ec = detail::open_socket(*service_, *live(), t, protocol.family());
    }

    /// True from a successful open or connect until close.
    bool is_open() const noexcept { return impl_ && impl_->phase_ != detail::socket_impl::phase::closed; }

    /// The transport of the open socket (rsocket or tcp); for a closed
    /// stream, the one async_connect will open.
    corio::transport transport() const noexcept {
        return is_open() ? impl_->transport_ : transport_preference_;
    }

    /// The socket's descriptor: an rsocket number, or a kernel fd; -1 when
    /// closed.
    native_handle_type native_handle() const noexcept {
        return is_open() ? impl_->socket_.get() : -1;
    }

    /// Ends pending operations with operation_aborted, then closes.
    void close() {
        boost::system::error_code ec;
        close(ec);
        detail::throw_if(ec, "close");
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    void close(boost::system::error_code& ec) { ec = service_->close(*live()); }

    /// Ends pending operations with operation_aborted; the socket stays open.
    void cancel() {
        boost::system::error_code ec;
        cancel(ec);
        detail::throw_if(ec, "cancel");
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    void cancel(boost::system::error_code& ec) {
        if (!is_open()) {
            ec = boost::asio::error::bad_descriptor;
            return;
        }
        service_->cancel_all(*impl_);
        ec.clear();
    }

    /// Shuts down one or both directions. On rsockets the call returns at
    /// once and rshutdown runs on the service's blocking-call thread: it can
    /// wait for the peer, which may be served by this same io_context.
    void shutdown(shutdown_type what) {
        boost::system::error_code ec;
        shutdown(what, ec);
        detail::throw_if(ec, "shutdown");
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    void shutdown(shutdown_type what, boost::system::error_code& ec) {
        ec = service_->shutdown(*live(), static_cast<int>(what));
    }

    /// The local address and port of the socket. Throws boost::system::system_error on failure.
    endpoint_type local_endpoint() const {
        boost::system::error_code ec;
        auto e = local_endpoint(ec);
        detail::throw_if(ec, "local_endpoint");
        return e;
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    endpoint_type local_endpoint(boost::system::error_code& ec) const {
        return impl_ ? detail::socket_endpoint(*impl_, false, ec)
                     : (ec = boost::asio::error::bad_descriptor, endpoint_type());
    }
    /// The peer's address and port. Throws boost::system::system_error on failure.
    endpoint_type remote_endpoint() const {
        boost::system::error_code ec;
        auto e = remote_endpoint(ec);
        detail::throw_if(ec, "remote_endpoint");
        return e;
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    endpoint_type remote_endpoint(boost::system::error_code& ec) const {
        return impl_ ? detail::socket_endpoint(*impl_, true, ec)
                     : (ec = boost::asio::error::bad_descriptor, endpoint_type());
    }

    /// Sets a corio::socket_base option. RDMA options (sq_size, rq_size,
    /// inline_size, iomap_size) only before connect: afterwards
    /// corio::error::option_after_connect.
    template <class Option>
    void set_option(const Option& option) {
        boost::system::error_code ec;
        set_option(option, ec);
        detail::throw_if(ec, "set_option");
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    template <class Option>
    void set_option(const Option& option, boost::system::error_code& ec) {
        ec = detail::check_option_allowed(*live(), Option::rdma_only);
        if (!ec) {
            std::lock_guard io_lock(impl_->io_mutex_);
            ec = option.apply(*impl_->socket_.ops(), impl_->socket_.get());
        }
    }
    /// Reads a corio::socket_base option into `option`, at any time. Throws
    /// boost::system::system_error on failure.
    template <class Option>
    void get_option(Option& option) const {
        boost::system::error_code ec;
        get_option(option, ec);
        detail::throw_if(ec, "get_option");
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    template <class Option>
    void get_option(Option& option, boost::system::error_code& ec) const {
        if (!impl_) {
            ec = boost::asio::error::bad_descriptor;
            return;
        }
        ec = detail::check_option_allowed(*impl_, false);
        if (!ec) {
            std::lock_guard io_lock(impl_->io_mutex_);
            ec = option.query(*impl_->socket_.ops(), impl_->socket_.get());
        }
    }

    /// Blocking reads and writes, for code that wants no io_context.
    template <class MutableBufferSequence>
    std::size_t read_some(const MutableBufferSequence& buffers) {
        boost::system::error_code ec;
        const auto n = read_some(buffers, ec);
        detail::throw_if(ec, "read_some");
        return n;
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    template <class MutableBufferSequence>
    std::size_t read_some(const MutableBufferSequence& buffers, boost::system::error_code& ec) {
        const detail::buffer_iovecs iov(buffers);
        return detail::blocking_transfer(*service_, *live(), detail::wait_kind::read, iov.data(), iov.count(),
                                         iov.total_size(), ec);
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
    std::size_t write_some(const ConstBufferSequence& buffers, boost::system::error_code& ec) {
        const detail::buffer_iovecs iov(buffers);
        return detail::blocking_transfer(*service_, *live(), detail::wait_kind::write, iov.data(),
                                         iov.count(), iov.total_size(), ec);
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

    /// Tells the stream that the peer mapped [offset, offset + length) for
    /// this side to iowrite into. rsockets keep the peer's mappings to
    /// themselves, so the application says what its protocol agreed; an
    /// iowrite outside every mapping declared here is refused before it
    /// reaches rdma-core.
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

private:
    friend struct detail::stream_access;

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

    detail::socket_impl* live() {
        if (!impl_)
            impl_ = service_->create_impl(); // revived after a move
        return impl_.get();
    }

    void release() noexcept {
        if (impl_) {
            service_->release_impl(*impl_);
            impl_.reset();
        }
    }

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
                                       self_->executor_);
            bool in_progress = false;
            const auto ec = detail::start_connect(*self_->service_, *self_->impl_,
                                                  self_->transport_preference_, peer, in_progress);
            if (in_progress) {
                op_type::start_waiting(op);
            } else {
                op->set_result(ec);
                op_type::finish(op);
            }
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

        template <class Handler, class BufferSequence>
        void operator()(Handler&& handler, const BufferSequence& buffers) const {
            using op_type =
                detail::transfer_operation<Kind, BufferSequence, std::decay_t<Handler>, Executor>;
            op_type::start(op_type::create(op_type::allocator_for(handler), *self_->service_,
                                           self_->impl_shared(), buffers,
                                           std::forward<Handler>(handler), self_->executor_));
        }

    private:
        basic_stream* self_;
    };

    std::shared_ptr<detail::socket_impl> impl_shared() {
        live();
        return impl_;
    }

    corio::transport transport_preference_;
    Executor executor_;
    rpoll_service* service_;
    std::shared_ptr<detail::socket_impl> impl_;
};

} // namespace corio
