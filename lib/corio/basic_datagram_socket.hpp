#pragma once

#include <cstddef>
#include <optional>
#include <type_traits>
#include <utility>

#include <sys/socket.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/post.hpp>

#include <corio/basic_socket.hpp>
#include <corio/detail/buffer_iovecs.hpp>
#include <corio/detail/datagram_control.hpp>
#include <corio/detail/datagram_operation.hpp>
#include <corio/transport.hpp>

namespace corio {

/// A datagram socket over rsockets (UD queue pairs) or kernel UDP, shaped
/// like boost::asio::basic_datagram_socket. Endpoints are
/// boost::asio::ip::udp::endpoint, IPv4 or IPv6.
///
/// Datagrams are all or nothing: a send moves the whole buffer sequence as
/// one datagram or fails, and a receive takes exactly one datagram. A
/// datagram longer than the transport carries (max_datagram_size) is refused
/// with boost::asio::error::message_size before any call. A datagram longer
/// than the receive buffers loses its tail, on both transports alike, and the
/// receive reports the bytes it kept, as recvfrom(2) and Asio do.
///
/// Transports: rsocket, udp (kernel), or automatic (rsocket where the host
/// has an RDMA device). rdma-core v44's datagram rsockets cannot send on
/// RoCE devices, Soft-RoCE included (doc/architecture.md).
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: unsafe, as with Asio's sockets.
///
/// @par Per-Operation Cancellation
/// Every asynchronous operation supports terminal, partial and total
/// cancellation: a pending one completes with
/// boost::asio::error::operation_aborted. A datagram is never half sent or
/// half received, so there is nothing to undo.
template <class Executor = boost::asio::any_io_executor>
class basic_datagram_socket : public basic_socket<boost::asio::ip::udp, Executor> {
    using base = basic_socket<boost::asio::ip::udp, Executor>;

public:
    /// A UDP address and port, IPv4 or IPv6.
    using typename base::endpoint_type;
    /// The executor the socket's operations complete on by default.
    using typename base::executor_type;
    /// boost::asio::ip::udp.
    using typename base::protocol_type;

    /// The socket type for another executor, as Asio's I/O objects offer.
    template <class OtherExecutor>
    struct rebind_executor {
        /// basic_datagram_socket on OtherExecutor.
        using other = basic_datagram_socket<OtherExecutor>;
    };

    /// A closed socket. `t` is the transport connect opens when the socket
    /// is not open yet.
    explicit basic_datagram_socket(const executor_type& executor,
                                   corio::transport t = corio::transport::automatic)
        : base(executor, t) {}

    /// A closed socket on `context`'s executor; `t` as for the executor overload.
    template <class ExecutionContext>
        requires std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>
    explicit basic_datagram_socket(ExecutionContext& context,
                                   corio::transport t = corio::transport::automatic)
        : basic_datagram_socket(context.get_executor(), t) {}

    /// Takes over `other`'s socket and pending operations; `other` is left closed.
    basic_datagram_socket(basic_datagram_socket&& other) noexcept = default;
    /// Closes this socket, then takes over `other`'s; `other` is left closed.
    basic_datagram_socket& operator=(basic_datagram_socket&& other) noexcept = default;

    /// The largest datagram this socket sends, in bytes, for `protocol`;
    /// 0 when it is closed. Kernel UDP: 65507 (IPv4), 65527 (IPv6).
    /// rsockets: 2032 (IPv4), 2020 (IPv6), from the 2048-byte message slot of
    /// rdma-core v44 less its side-channel header.
    std::size_t max_datagram_size(const protocol_type& protocol = protocol_type::v4()) const {
        return this->is_open() ? this->impl_->socket_.ops()->max_datagram(protocol.family()) : 0;
    }

    /// Sets the default destination of send, and the only source receive
    /// takes datagrams from. Opens a socket of the endpoint's family first
    /// if none is open. Returns at once on both transports.
    void connect(const endpoint_type& peer) {
        boost::system::error_code ec;
        connect(peer, ec);
        detail::throw_if(ec, "connect");
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    void connect(const endpoint_type& peer, boost::system::error_code& ec) {
        if (!this->is_open())
            family_ = peer.protocol().family();
        ec = detail::connect_datagram(*this->service_, *this->live(), this->transport_preference_,
                                      peer);
    }

    /// Connects, as connect(); completes through the token for symmetry with
    /// streams.
    ///
    /// @par Completion Signature
    /// @code void(boost::system::error_code) @endcode
    template <class ConnectToken = boost::asio::default_completion_token_t<executor_type>>
    auto async_connect(const endpoint_type& peer,
                       ConnectToken&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return boost::asio::async_initiate<ConnectToken, void(boost::system::error_code)>(
            initiate_async_connect(this), token, peer);
    }

    /// Blocking sends of one datagram, to `destination` or (send) to the
    /// connected peer. Return the bytes sent: all of them.
    template <class ConstBufferSequence>
    std::size_t send_to(const ConstBufferSequence& buffers, const endpoint_type& destination) {
        boost::system::error_code ec;
        const auto n = send_to(buffers, destination, ec);
        detail::throw_if(ec, "send_to");
        return n;
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    template <class ConstBufferSequence>
    std::size_t send_to(const ConstBufferSequence& buffers, const endpoint_type& destination,
                        boost::system::error_code& ec) {
        endpoint_type to = destination;
        return blocking(detail::wait_kind::write, buffers, &to, to.protocol().family(), ec);
    }
    /// One datagram to the connected peer, blocking; throws on failure.
    template <class ConstBufferSequence>
    std::size_t send(const ConstBufferSequence& buffers) {
        boost::system::error_code ec;
        const auto n = send(buffers, ec);
        detail::throw_if(ec, "send");
        return n;
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    template <class ConstBufferSequence>
    std::size_t send(const ConstBufferSequence& buffers, boost::system::error_code& ec) {
        return blocking(detail::wait_kind::write, buffers, nullptr, family_, ec);
    }

    /// Blocking receives of one datagram; receive_from also gives its source.
    template <class MutableBufferSequence>
    std::size_t receive_from(const MutableBufferSequence& buffers, endpoint_type& source) {
        boost::system::error_code ec;
        const auto n = receive_from(buffers, source, ec);
        detail::throw_if(ec, "receive_from");
        return n;
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    template <class MutableBufferSequence>
    std::size_t receive_from(const MutableBufferSequence& buffers, endpoint_type& source,
                             boost::system::error_code& ec) {
        return blocking(detail::wait_kind::read, buffers, &source, family_, ec);
    }
    /// One datagram, blocking; throws on failure.
    template <class MutableBufferSequence>
    std::size_t receive(const MutableBufferSequence& buffers) {
        boost::system::error_code ec;
        const auto n = receive(buffers, ec);
        detail::throw_if(ec, "receive");
        return n;
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    template <class MutableBufferSequence>
    std::size_t receive(const MutableBufferSequence& buffers, boost::system::error_code& ec) {
        return blocking(detail::wait_kind::read, buffers, nullptr, family_, ec);
    }

    /// Sends one datagram to `destination`.
    ///
    /// @par Completion Signature
    /// @code void(boost::system::error_code, std::size_t) @endcode
    /// message_size for a datagram longer than max_datagram_size, before any
    /// call; bad_descriptor on a closed socket.
    template <class ConstBufferSequence,
              class WriteToken = boost::asio::default_completion_token_t<executor_type>>
    auto async_send_to(const ConstBufferSequence& buffers, const endpoint_type& destination,
                       WriteToken&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return boost::asio::async_initiate<WriteToken, void(boost::system::error_code, std::size_t)>(
            initiate_async_datagram<detail::wait_kind::write>(this), token, buffers,
            std::optional<endpoint_type>(destination), static_cast<endpoint_type*>(nullptr));
    }

    /// Sends one datagram to the connected peer.
    ///
    /// @par Completion Signature
    /// @code void(boost::system::error_code, std::size_t) @endcode
    /// not_connected on a socket that was never connected; otherwise as
    /// async_send_to.
    template <class ConstBufferSequence,
              class WriteToken = boost::asio::default_completion_token_t<executor_type>>
    auto async_send(const ConstBufferSequence& buffers,
                    WriteToken&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return boost::asio::async_initiate<WriteToken, void(boost::system::error_code, std::size_t)>(
            initiate_async_datagram<detail::wait_kind::write>(this), token, buffers,
            std::optional<endpoint_type>(), static_cast<endpoint_type*>(nullptr));
    }

    /// Receives one datagram and its source. `source` must stay valid until
    /// the operation completes.
    ///
    /// @par Completion Signature
    /// @code void(boost::system::error_code, std::size_t) @endcode
    template <class MutableBufferSequence,
              class ReadToken = boost::asio::default_completion_token_t<executor_type>>
    auto async_receive_from(const MutableBufferSequence& buffers, endpoint_type& source,
                            ReadToken&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return boost::asio::async_initiate<ReadToken, void(boost::system::error_code, std::size_t)>(
            initiate_async_datagram<detail::wait_kind::read>(this), token, buffers,
            std::optional<endpoint_type>(), &source);
    }

    /// Receives one datagram (from the connected peer, on a connected socket).
    ///
    /// @par Completion Signature
    /// @code void(boost::system::error_code, std::size_t) @endcode
    template <class MutableBufferSequence,
              class ReadToken = boost::asio::default_completion_token_t<executor_type>>
    auto async_receive(const MutableBufferSequence& buffers,
                       ReadToken&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return boost::asio::async_initiate<ReadToken, void(boost::system::error_code, std::size_t)>(
            initiate_async_datagram<detail::wait_kind::read>(this), token, buffers,
            std::optional<endpoint_type>(), static_cast<endpoint_type*>(nullptr));
    }

    /// Opens as basic_socket::open does, and remembers the family for the
    /// size limit of send.
    void open(corio::transport t = corio::transport::automatic,
              const protocol_type& protocol = protocol_type::v4()) {
        family_ = protocol.family();
        base::open(t, protocol);
    }
    /// As the overload above, but reports a failure in `ec` instead of throwing.
    void open(corio::transport t, const protocol_type& protocol, boost::system::error_code& ec) {
        family_ = protocol.family();
        base::open(t, protocol, ec);
    }

private:
    /// Refuses what the datagram can never be, before any call.
    boost::system::error_code check_send(std::size_t size, int family, bool has_destination) {
        return detail::check_datagram_send(*this->live(), size, family, has_destination);
    }

    template <class BufferSequence>
    std::size_t blocking(detail::wait_kind kind, const BufferSequence& buffers, endpoint_type* peer,
                         int family, boost::system::error_code& ec) {
        const detail::buffer_iovecs iov(buffers);
        if (kind == detail::wait_kind::write) {
            if ((ec = check_send(boost::asio::buffer_size(buffers), family, peer != nullptr)))
                return 0;
        }
        return detail::blocking_datagram(*this->service_, *this->live(), kind, iov.data(), iov.count(), peer, ec);
    }

    class initiate_async_connect {
    public:
        using executor_type = Executor;
        explicit initiate_async_connect(basic_datagram_socket* self) noexcept : self_(self) {}
        executor_type get_executor() const noexcept { return self_->get_executor(); }

        template <class Handler>
        void operator()(Handler&& handler, const endpoint_type& peer) const {
            boost::system::error_code ec;
            self_->connect(peer, ec);
            auto executor = boost::asio::get_associated_executor(handler, self_->get_executor());
            boost::asio::post(executor, [handler = std::forward<Handler>(handler), ec]() mutable {
                std::move(handler)(ec);
            });
        }

    private:
        basic_datagram_socket* self_;
    };

    template <detail::wait_kind Kind>
    class initiate_async_datagram {
    public:
        using executor_type = Executor;
        explicit initiate_async_datagram(basic_datagram_socket* self) noexcept : self_(self) {}
        executor_type get_executor() const noexcept { return self_->get_executor(); }

        template <class Handler, class BufferSequence>
        void operator()(Handler&& handler, const BufferSequence& buffers,
                        std::optional<endpoint_type> destination, endpoint_type* source) const {
            using op_type =
                detail::datagram_operation<Kind, BufferSequence, std::decay_t<Handler>, Executor>;
            const int family = destination ? destination->protocol().family() : self_->family_;
            const bool has_destination = destination.has_value();
            auto* op = op_type::create(op_type::allocator_for(handler), *self_->service_,
                                       self_->impl_shared(), buffers, std::move(destination),
                                       source, std::forward<Handler>(handler), self_->executor_);
            if constexpr (Kind == detail::wait_kind::write) {
                if (const auto ec = self_->check_send(boost::asio::buffer_size(buffers), family,
                                                      has_destination)) {
                    op_type::refuse(op, ec);
                    return;
                }
            }
            op_type::start(op);
        }

    private:
        basic_datagram_socket* self_;
    };

    int family_ = AF_INET;
};

} // namespace corio
