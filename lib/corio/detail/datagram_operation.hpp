#pragma once

#include <optional>
#include <tuple>

#include <boost/asio/ip/udp.hpp>

#include <corio/detail/buffer_iovecs.hpp>
#include <corio/detail/datagram_control.hpp>
#include <corio/detail/handler_operation.hpp>

namespace corio::detail {

/// async_send_to and async_send (Kind write: one nonblocking sendto of one
/// whole datagram), async_receive_from and async_receive (Kind read: one
/// nonblocking recvfrom of one datagram). Unlike a stream transfer, empty
/// buffers still move a datagram: a zero-length one.
template <wait_kind Kind, class BufferSequence, class Handler, class IoExecutor>
class datagram_operation final
    : public handler_operation<datagram_operation<Kind, BufferSequence, Handler, IoExecutor>,
                               Handler, IoExecutor> {
public:
    using endpoint_type = boost::asio::ip::udp::endpoint;

    /// `destination` (write: where to, empty for the connected peer) or
    /// `source` (read: filled in with the sender, may be null).
    datagram_operation(rpoll_service& service, std::shared_ptr<socket_impl> impl,
                       const BufferSequence& buffers, std::optional<endpoint_type> destination,
                       endpoint_type* source, Handler handler, const IoExecutor& io_executor)
        : datagram_operation::handler_operation(Kind, service, std::move(impl), std::move(handler),
                                                io_executor),
          buffers_(buffers), destination_(std::move(destination)), source_(source) {}

    bool perform(socket_impl& impl) override {
        const buffer_iovecs iov(buffers_);
        endpoint_type* peer = Kind == wait_kind::write ? (destination_ ? &*destination_ : nullptr)
                                                       : source_;
        this->bytes_ = datagram_call(impl, Kind, iov.data(), iov.count(), peer, this->ec_);
        return !datagram_would_block(this->ec_);
    }

    /// Completes at once with `ec`, before any call (a refused datagram).
    static void refuse(datagram_operation* op, const boost::system::error_code& ec) {
        op->ec_ = ec;
        datagram_operation::finish(op);
    }

    auto results() { return std::tuple(this->ec_, this->bytes_); }

private:
    BufferSequence buffers_;
    std::optional<endpoint_type> destination_;
    endpoint_type* source_;
};

} // namespace corio::detail
