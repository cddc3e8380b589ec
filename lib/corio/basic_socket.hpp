#pragma once

#include <memory>
#include <mutex>
#include <type_traits>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/socket_base.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

#include <corio/detail/datagram_control.hpp>
#include <corio/detail/socket_control.hpp>
#include <corio/detail/socket_impl.hpp>
#include <corio/detail/wait_initiation.hpp>
#include <corio/rpoll_service.hpp>
#include <corio/stall_timeout.hpp>
#include <corio/transport.hpp>

namespace corio {

namespace detail {
inline void throw_if(const boost::system::error_code& ec, const char* what) {
    if (ec)
        throw boost::system::system_error(ec, what);
}
} // namespace detail

/// What streams (basic_stream) and datagram sockets (basic_datagram_socket)
/// share, as boost::asio::basic_socket is shared by Asio's: opening, closing,
/// cancelling, options, endpoints, binding, shutdown and the reactor-style
/// calls (async_wait, non_blocking, available). `Protocol` is
/// boost::asio::ip::tcp or boost::asio::ip::udp; it gives the endpoint type
/// and the kind of socket open() makes.
///
/// The object is a thin handle: its state lives in a detail::socket_impl
/// shared with the operations in flight, and readiness comes from the
/// execution context's rpoll_service. Not used on its own: its constructors
/// and destructor are protected.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: unsafe, as with Asio's sockets;
/// use a strand when several threads run the io_context.
///
/// @par Per-Operation Cancellation
/// async_wait supports terminal, partial and total cancellation: a pending
/// wait completes with boost::asio::error::operation_aborted.
template <class Protocol, class Executor = boost::asio::any_io_executor>
class basic_socket {
public:
    /// The executor the socket's operations complete on by default.
    using executor_type = Executor;
    /// boost::asio::ip::tcp or boost::asio::ip::udp.
    using protocol_type = Protocol;
    /// An IP address and port: corio addresses rsockets and kernel sockets alike.
    using endpoint_type = typename Protocol::endpoint;
    /// An rsocket number (rsocket transport) or a kernel file descriptor.
    using native_handle_type = int;
    /// Which directions shutdown() ends, as boost::asio::socket_base's.
    using shutdown_type = boost::asio::socket_base::shutdown_type;
    /// shutdown(): no more receiving.
    static constexpr shutdown_type shutdown_receive = boost::asio::socket_base::shutdown_receive;
    /// shutdown(): no more sending; a stream's peer reads eof.
    static constexpr shutdown_type shutdown_send = boost::asio::socket_base::shutdown_send;
    /// shutdown(): both directions.
    static constexpr shutdown_type shutdown_both = boost::asio::socket_base::shutdown_both;
    /// What async_wait waits for, as boost::asio::socket_base's.
    using wait_type = boost::asio::socket_base::wait_type;
    /// async_wait(): readable (data, a connection to accept, or the peer's end).
    static constexpr wait_type wait_read = boost::asio::socket_base::wait_read;
    /// async_wait(): writable.
    static constexpr wait_type wait_write = boost::asio::socket_base::wait_write;
    /// async_wait(): an error or urgent data (POLLPRI, POLLERR, POLLHUP).
    static constexpr wait_type wait_error = boost::asio::socket_base::wait_error;

    basic_socket(const basic_socket&) = delete;
    basic_socket& operator=(const basic_socket&) = delete;

    /// The executor given at construction.
    executor_type get_executor() const noexcept { return executor_; }

    /// Opens a socket of `t` for `protocol`, without connecting: a stream
    /// socket for tcp (transport rsocket, tcp or automatic), a datagram
    /// socket for udp (rsocket, udp or automatic).
    void open(corio::transport t = corio::transport::automatic,
              const protocol_type& protocol = protocol_type::v4()) {
        boost::system::error_code ec;
        open(t, protocol, ec);
        detail::throw_if(ec, "open");
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    void open(corio::transport t, const protocol_type& protocol, boost::system::error_code& ec) {
        transport_preference_ = t;
        ec = detail::open_for(*service_, *live(), t, protocol);
    }

    /// True from a successful open or connect until close.
    bool is_open() const noexcept {
        return impl_ && impl_->phase_ != detail::socket_impl::phase::closed;
    }

    /// The transport of the open socket; for a closed one, the one a
    /// connect will open.
    corio::transport transport() const noexcept {
        return is_open() ? impl_->transport_ : transport_preference_;
    }

    /// The socket's descriptor: an rsocket number, or a kernel fd; -1 when
    /// closed.
    native_handle_type native_handle() const noexcept {
        return is_open() ? impl_->socket_.get() : -1;
    }

    /// Binds the open socket to `local`.
    void bind(const endpoint_type& local) {
        boost::system::error_code ec;
        bind(local, ec);
        detail::throw_if(ec, "bind");
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    void bind(const endpoint_type& local, boost::system::error_code& ec) {
        ec = detail::bind_socket(*live(), {local.address(), local.port()});
    }

    /// Ends pending operations with operation_aborted, then closes.
    void close() {
        boost::system::error_code ec;
        close(ec);
        detail::throw_if(ec, "close");
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    void close(boost::system::error_code& ec) {
        detail::socket_impl* impl = live();
        // An acceptor's limit counts open streams only. Given back before the
        // close: once that has ended the pending operations, their handlers
        // may destroy this object on another thread (TSan saw the race).
        impl->open_slot_.reset();
        ec = service_->close(*impl);
    }

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
        return endpoint(false, ec);
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
        return endpoint(true, ec);
    }

    /// Sets a corio::socket_base option. RDMA options (sq_size, rq_size,
    /// inline_size, iomap_size) only before connect: afterwards
    /// corio::error::option_after_connect. A stream also takes
    /// corio::stall_timeout, which the stream keeps itself.
    template <class Option>
    void set_option(const Option& option) {
        boost::system::error_code ec;
        set_option(option, ec);
        detail::throw_if(ec, "set_option");
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    template <class Option>
    void set_option(const Option& option, boost::system::error_code& ec) {
        if constexpr (stream_option<Option>) {
            static_assert(std::is_same_v<Protocol, boost::asio::ip::tcp>, "an option of streams");
            ec = option.apply(*service_, *live());
        } else {
            ec = detail::check_option_allowed(*live(), Option::rdma_only);
            if (!ec) {
                std::lock_guard io_lock(impl_->io_mutex_);
                ec = option.apply(*impl_->socket_.ops(), impl_->socket_.get());
            }
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
        if constexpr (stream_option<Option>) {
            ec = option.query(*impl_);
        } else {
            ec = detail::check_option_allowed(*impl_, false);
            if (!ec) {
                std::lock_guard io_lock(impl_->io_mutex_);
                ec = option.query(*impl_->socket_.ops(), impl_->socket_.get());
            }
        }
    }

    /// Waits until the socket is ready for `what`, moving no data, as
    /// boost::asio::basic_socket::async_wait: with non_blocking(true) and
    /// read_some/write_some, a coroutine tries first and waits only when a
    /// call reports would_block. An error or hang-up ends every kind of
    /// wait; the next call reports it. As with Asio, readiness is a hint:
    /// the wait ends when the socket was ready, and a call after it may
    /// still report would_block if another call took what was there, so a
    /// try-then-wait loop tries again.
    ///
    /// @par Completion Signature
    /// @code void(boost::system::error_code) @endcode
    /// boost::asio::error::bad_descriptor when the socket is closed,
    /// invalid_argument for a `what` that is no wait_type.
    ///
    /// @par Per-Operation Cancellation
    /// Terminal, partial and total: completes with operation_aborted.
    template <class WaitToken = boost::asio::default_completion_token_t<executor_type>>
    auto async_wait(wait_type what,
                    WaitToken&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return boost::asio::async_initiate<WaitToken, void(boost::system::error_code)>(
            detail::wait_initiation<Executor>(*service_, impl_shared(), executor_), token, what);
    }

    /// Sets the socket's mode, as boost::asio::basic_socket::non_blocking:
    /// with true, read_some, write_some (and a stream's iowrite) make one
    /// call and report boost::asio::error::would_block instead of waiting.
    /// Asynchronous operations are not affected. A socket opens blocking.
    void non_blocking(bool mode) {
        boost::system::error_code ec;
        non_blocking(mode, ec);
        detail::throw_if(ec, "non_blocking");
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    void non_blocking(bool mode, boost::system::error_code& ec) {
        ec = detail::set_non_blocking(*live(), mode);
    }
    /// The mode non_blocking(bool) set; false for a closed socket.
    bool non_blocking() const noexcept { return is_open() && impl_->non_blocking_; }

    /// How many bytes a read can take now without waiting. Exact on kernel
    /// sockets (FIONREAD); on rsockets, what their receive buffer holds
    /// (counted with a peek, which copies it: not a data-path call); on the
    /// framed tcp transport a lower bound, the part of the current data
    /// frame that has arrived.
    std::size_t available() const {
        boost::system::error_code ec;
        const auto n = available(ec);
        detail::throw_if(ec, "available");
        return n;
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    std::size_t available(boost::system::error_code& ec) const {
        if (!impl_) {
            ec = boost::asio::error::bad_descriptor;
            return 0;
        }
        return detail::socket_available(*impl_, ec);
    }

protected:
    /// A closed socket; `t` is the transport a connect opens.
    explicit basic_socket(const executor_type& executor, corio::transport t)
        : transport_preference_(t), executor_(executor), service_(&rpoll_service_of(executor)),
          impl_(service_->create_impl()) {}

    /// Takes over `other`'s socket and pending operations; `other` is left closed.
    basic_socket(basic_socket&& other) noexcept
        : transport_preference_(other.transport_preference_), executor_(other.executor_),
          service_(other.service_), impl_(std::exchange(other.impl_, nullptr)) {}

    /// Closes this socket, then takes over `other`'s; `other` is left closed.
    basic_socket& operator=(basic_socket&& other) noexcept {
        if (this != &other) {
            release();
            transport_preference_ = other.transport_preference_;
            executor_ = other.executor_;
            service_ = other.service_;
            impl_ = std::exchange(other.impl_, nullptr);
        }
        return *this;
    }

    /// Closes the socket; pending operations end with operation_aborted.
    ~basic_socket() { release(); }

    /// The socket's state, made anew after a move left none.
    detail::socket_impl* live() {
        if (!impl_) [[unlikely]]
            revive();
        return impl_.get();
    }
    /// live()'s rare half, out of line so that live() itself inlines into
    /// every data-path call: new state for an object moved from.
    [[gnu::noinline]] void revive() { impl_ = service_->create_impl(); }

    /// live(), shared: what an operation keeps alive until it completes.
    std::shared_ptr<detail::socket_impl> impl_shared() {
        live();
        return impl_;
    }

    /// The transport a connect opens when the socket is closed.
    corio::transport transport_preference_;
    /// The executor given at construction.
    Executor executor_;
    /// The execution context's rpoll_service.
    rpoll_service* service_;
    /// The socket's state, shared with the operations in flight.
    std::shared_ptr<detail::socket_impl> impl_;

private:
    void release() noexcept {
        if (impl_) {
            service_->release_impl(*impl_);
            impl_->open_slot_.reset();
            impl_.reset();
        }
    }

    endpoint_type endpoint(bool remote, boost::system::error_code& ec) const {
        if (!impl_) {
            ec = boost::asio::error::bad_descriptor;
            return {};
        }
        const auto e = detail::socket_endpoint(*impl_, remote, ec);
        return {e.address(), e.port()};
    }
};

} // namespace corio
