#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/socket_base.hpp>

#include <corio/basic_stream.hpp>
#include <corio/detail/accept_admission.hpp>
#include <corio/detail/accept_operation.hpp>
#include <corio/detail/socket_control.hpp>
#include <corio/detail/wait_initiation.hpp>
#include <corio/rpoll_service.hpp>
#include <corio/transport.hpp>

namespace corio {

/// Accepts connections over rsockets or kernel TCP, shaped like
/// boost::asio::basic_socket_acceptor.
///
/// A listening rsocket is re-checked every
/// rpoll_service::accept_retry_interval while an accept waits: rdma-core
/// v44's rpoll may otherwise not report a new connection for up to 5 s.
///
/// Who may connect: an accept filter (set_accept_filter, for example a
/// corio::network_allow_list) and a limit on the streams it accepted that
/// are open at once (set_max_open_streams). A connection either refuses is
/// closed while an accept is pending, before the application sees it: it
/// never reaches async_accept's handler, which waits for the next one, and
/// refused_connections() counts it. The peer sees its connection closed at
/// once (end of stream or a reset), never a hang. So that refusal is prompt,
/// a server keeps an accept pending, as it would to serve.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: unsafe. The accept filter runs
/// on the accept's handler executor; set it while no accept is pending.
/// Accepted streams may close on any thread.
///
/// @par Per-Operation Cancellation
/// async_accept supports terminal, partial and total cancellation: a
/// pending accept completes with boost::asio::error::operation_aborted.
template <class Executor = boost::asio::any_io_executor>
class basic_acceptor {
public:
    /// The executor the acceptor's operations complete on by default.
    using executor_type = Executor;
    /// An IP address and port: corio addresses rsockets and kernel sockets alike.
    using endpoint_type = boost::asio::ip::tcp::endpoint;
    /// An rsocket number (rsocket transport) or a kernel file descriptor (tcp).
    using native_handle_type = int;
    /// The stream async_accept makes for each connection.
    using stream_type = basic_stream<Executor>;
    /// A predicate on a connecting peer's address and port: true admits it.
    using accept_filter = std::function<bool(const endpoint_type&)>;

    /// The acceptor type for another executor, as Asio's I/O objects offer.
    template <class OtherExecutor>
    struct rebind_executor {
        /// basic_acceptor on OtherExecutor.
        using other = basic_acceptor<OtherExecutor>;
    };

    /// A closed acceptor.
    explicit basic_acceptor(const executor_type& executor)
        : executor_(executor),
          service_(&rpoll_service_of(executor)),
          impl_(service_->create_impl()),
          admission_(std::make_shared<detail::accept_admission>()) {}

    /// Opens, sets reuse_address (kernel sockets), binds to `local` and
    /// listens: the usual server set-up in one step.
    basic_acceptor(const executor_type& executor, const endpoint_type& local,
                   corio::transport t = corio::transport::automatic,
                   int backlog = boost::asio::socket_base::max_listen_connections)
        : basic_acceptor(executor) {
        open(t, local.protocol());
        if (impl_->transport_ == corio::transport::tcp) {
            const int on = 1;
            std::lock_guard io_lock(impl_->io_mutex_);
            detail::throw_if(impl_->socket_.ops()->setsockopt(impl_->socket_.get(), SOL_SOCKET,
                                                              SO_REUSEADDR, &on, sizeof on),
                             "reuse_address");
        }
        bind(local);
        listen(backlog);
    }

    /// A closed acceptor on `context`'s executor.
    template <class ExecutionContext>
        requires std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>
    explicit basic_acceptor(ExecutionContext& context) : basic_acceptor(context.get_executor()) {}

    /// Opens, binds to `local` and listens, on `context`'s executor, as the executor overload does.
    /// Throws boost::system::system_error on failure.
    template <class ExecutionContext>
        requires std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>
    basic_acceptor(ExecutionContext& context, const endpoint_type& local,
                   corio::transport t = corio::transport::automatic,
                   int backlog = boost::asio::socket_base::max_listen_connections)
        : basic_acceptor(context.get_executor(), local, t, backlog) {}

    /// Takes over `other`'s socket and pending operations; `other` is left closed.
    basic_acceptor(basic_acceptor&& other) noexcept
        : executor_(other.executor_), service_(other.service_),
          impl_(std::exchange(other.impl_, nullptr)),
          admission_(std::exchange(other.admission_, nullptr)) {}
    /// Closes this acceptor (pending operations end with operation_aborted), then takes over
    /// `other`'s socket; `other` is left closed.
    basic_acceptor& operator=(basic_acceptor&& other) noexcept {
        if (this != &other) {
            release();
            executor_ = other.executor_;
            service_ = other.service_;
            impl_ = std::exchange(other.impl_, nullptr);
            admission_ = std::exchange(other.admission_, nullptr);
        }
        return *this;
    }
    basic_acceptor(const basic_acceptor&) = delete;
    basic_acceptor& operator=(const basic_acceptor&) = delete;

    ~basic_acceptor() { release(); }

    /// The executor given at construction.
    executor_type get_executor() const noexcept { return executor_; }

    /// Opens a socket of transport `t` for `protocol` (IPv4 by default), without binding: needed
    /// only to set options before bind and listen. Throws boost::system::system_error on failure.
    void open(corio::transport t = corio::transport::automatic,
              const boost::asio::ip::tcp& protocol = boost::asio::ip::tcp::v4()) {
        boost::system::error_code ec;
        open(t, protocol, ec);
        detail::throw_if(ec, "open");
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    void open(corio::transport t, const boost::asio::ip::tcp& protocol,
              boost::system::error_code& ec) {
        ec = detail::open_socket(*service_, *live(), t, protocol.family());
    }

    /// True from a successful open until close.
    bool is_open() const noexcept {
        return impl_ && impl_->phase_ != detail::socket_impl::phase::closed;
    }
    /// The transport of the open socket (rsocket or tcp); automatic when closed.
    corio::transport transport() const noexcept {
        return is_open() ? impl_->transport_ : corio::transport::automatic;
    }
    /// The socket's descriptor: an rsocket number, or a kernel fd; -1 when closed.
    native_handle_type native_handle() const noexcept {
        return is_open() ? impl_->socket_.get() : -1;
    }

    /// Binds the open socket to `local`; port 0 lets the system choose, and local_endpoint() says
    /// which. Throws boost::system::system_error on failure.
    void bind(const endpoint_type& local) {
        boost::system::error_code ec;
        bind(local, ec);
        detail::throw_if(ec, "bind");
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    void bind(const endpoint_type& local, boost::system::error_code& ec) {
        ec = detail::bind_socket(*live(), local);
    }

    /// Listens for connections, with room for `backlog` not yet accepted. RDMA options can no
    /// longer be set once it listens. Throws boost::system::system_error on failure.
    void listen(int backlog = boost::asio::socket_base::max_listen_connections) {
        boost::system::error_code ec;
        listen(backlog, ec);
        detail::throw_if(ec, "listen");
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    void listen(int backlog, boost::system::error_code& ec) {
        ec = detail::listen_socket(*service_, *live(), backlog);
    }

    /// The address and port the socket is bound to. Throws boost::system::system_error on failure.
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

    /// Sets a corio::socket_base option. RDMA options (sq_size, rq_size, inline_size, iomap_size)
    /// only before listen: afterwards corio::error::option_after_connect. Accepted streams inherit
    /// them. Throws boost::system::system_error on failure.
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
    /// Reads a corio::socket_base option into `option`. Throws boost::system::system_error on
    /// failure.
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

    /// Ends pending accepts with operation_aborted, then closes. Throws boost::system::system_error
    /// on failure.
    void close() {
        boost::system::error_code ec;
        close(ec);
        detail::throw_if(ec, "close");
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    void close(boost::system::error_code& ec) { ec = service_->close(*live()); }

    /// Ends pending accepts with operation_aborted; the socket stays open.
    /// boost::asio::error::bad_descriptor when closed. Throws boost::system::system_error on
    /// failure.
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

    /// Admits only peers for which `filter` returns true; an empty filter
    /// admits everyone (the default). The filter sees the peer's address as
    /// the listener does (an IPv4 peer of an IPv6 listener as \::ffff:a.b.c.d).
    /// It runs on the accept's handler executor; one that throws refuses the
    /// peer. Set it
    /// while no accept is pending.
    void set_accept_filter(accept_filter filter) { admission()->filter_ = std::move(filter); }

    /// Admits at most `limit` streams accepted by this acceptor open at once
    /// (accepted and not yet closed or destroyed); beyond it a connection is
    /// refused, and accepting resumes as soon as one of them closes. A
    /// stream counts until close() or its destruction, whichever is first,
    /// on whatever thread; it may outlive the acceptor. 0 refuses every
    /// connection. Set it while no accept is pending.
    void set_max_open_streams(std::size_t limit) { admission()->max_open_ = limit; }
    /// The limit set_max_open_streams set; std::numeric_limits<std::size_t>::max() when none.
    std::size_t max_open_streams() const noexcept {
        return admission_ ? admission_->max_open_ : detail::accept_admission::unlimited;
    }
    /// How many streams this acceptor accepted are open now.
    std::size_t open_streams() const noexcept { return admission_ ? admission_->open() : 0; }
    /// How many connections the accept filter or the open-stream limit
    /// refused since this acceptor was made.
    std::uint64_t refused_connections() const noexcept {
        return admission_ ? admission_->refused() : 0;
    }

    /// Accepts a connection into a new stream on this acceptor's executor.
    /// Connections the accept filter or the open-stream limit refuses do not
    /// complete it: it waits for the next.
    ///
    /// @par Completion Signature
    /// @code void(boost::system::error_code, basic_stream<Executor>) @endcode
    template <class AcceptToken = boost::asio::default_completion_token_t<executor_type>>
    auto async_accept(AcceptToken&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return boost::asio::async_initiate<AcceptToken,
                                           void(boost::system::error_code, stream_type)>(
            initiate_async_accept(this), token);
    }

    /// Accepts a connection into `peer`, which must be closed; refused
    /// connections are skipped as for the overload above.
    ///
    /// @par Completion Signature
    /// @code void(boost::system::error_code) @endcode
    template <class PeerExecutor,
              class AcceptToken = boost::asio::default_completion_token_t<executor_type>>
    auto async_accept(basic_stream<PeerExecutor>& peer,
                      AcceptToken&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return boost::asio::async_initiate<AcceptToken, void(boost::system::error_code)>(
            initiate_async_accept_into(this), token, &peer);
    }

    /// What async_wait waits for: wait_read (a connection to accept),
    /// wait_write, wait_error, as boost::asio::socket_base's.
    using wait_type = boost::asio::socket_base::wait_type;

    /// Waits until the acceptor is ready for `what` without accepting, as
    /// boost::asio::basic_socket_acceptor::async_wait. On a listening
    /// rsocket wait_read is re-checked like an accept
    /// (rpoll_service::accept_retry_interval).
    ///
    /// @par Completion Signature
    /// @code void(boost::system::error_code) @endcode
    ///
    /// @par Per-Operation Cancellation
    /// Terminal, partial and total: completes with operation_aborted.
    template <class WaitToken = boost::asio::default_completion_token_t<executor_type>>
    auto async_wait(wait_type what,
                    WaitToken&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return boost::asio::async_initiate<WaitToken, void(boost::system::error_code)>(
            detail::wait_initiation<Executor>(*service_, impl_shared(), executor_), token, what);
    }

    /// Records the acceptor's mode, as Asio's non_blocking; corio's accepts
    /// are all asynchronous, so it changes no call of this class today.
    void non_blocking(bool mode) {
        boost::system::error_code ec;
        non_blocking(mode, ec);
        detail::throw_if(ec, "non_blocking");
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    void non_blocking(bool mode, boost::system::error_code& ec) {
        ec = detail::set_non_blocking(*live(), mode);
    }
    /// The mode non_blocking(bool) set; false for a closed acceptor.
    bool non_blocking() const noexcept { return is_open() && impl_->non_blocking_; }

private:
    detail::socket_impl* live() {
        if (!impl_)
            impl_ = service_->create_impl();
        return impl_.get();
    }

    std::shared_ptr<detail::socket_impl> impl_shared() {
        live();
        return impl_;
    }

    const std::shared_ptr<detail::accept_admission>& admission() {
        if (!admission_)
            admission_ = std::make_shared<detail::accept_admission>(); // revived after a move
        return admission_;
    }

    void release() noexcept {
        if (impl_) {
            service_->release_impl(*impl_);
            impl_.reset();
        }
    }

    class initiate_async_accept {
    public:
        using executor_type = Executor;
        explicit initiate_async_accept(basic_acceptor* self) noexcept : self_(self) {}
        executor_type get_executor() const noexcept { return self_->get_executor(); }

        template <class Handler>
        void operator()(Handler&& handler) const {
            using op_type = detail::accept_operation<stream_type, std::decay_t<Handler>, Executor>;
            op_type::start(op_type::create(op_type::allocator_for(handler), *self_->service_,
                                           self_->impl_shared(), self_->admission(),
                                           stream_type(self_->executor_),
                                           std::forward<Handler>(handler), self_->executor_));
        }

    private:
        basic_acceptor* self_;
    };

    class initiate_async_accept_into {
    public:
        using executor_type = Executor;
        explicit initiate_async_accept_into(basic_acceptor* self) noexcept : self_(self) {}
        executor_type get_executor() const noexcept { return self_->get_executor(); }

        template <class Handler, class PeerExecutor>
        void operator()(Handler&& handler, basic_stream<PeerExecutor>* peer) const {
            using op_type = detail::accept_operation<basic_stream<PeerExecutor>*,
                                                     std::decay_t<Handler>, Executor>;
            auto* op = op_type::create(op_type::allocator_for(handler), *self_->service_,
                                       self_->impl_shared(), self_->admission(), peer,
                                       std::forward<Handler>(handler), self_->executor_);
            if (peer->is_open()) {
                op->ec_ = boost::asio::error::already_open;
                op_type::finish(op);
                return;
            }
            op_type::start(op);
        }

    private:
        basic_acceptor* self_;
    };

    Executor executor_;
    rpoll_service* service_;
    std::shared_ptr<detail::socket_impl> impl_;
    std::shared_ptr<detail::accept_admission> admission_;
};

} // namespace corio
