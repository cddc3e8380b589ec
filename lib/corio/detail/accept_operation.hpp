#pragma once

#include <tuple>
#include <type_traits>

#include <boost/asio/error.hpp>

#include <corio/detail/handler_operation.hpp>
#include <corio/detail/stream_access.hpp>

namespace corio::detail {

/// async_accept: one nonblocking accept on the listening socket; the new
/// socket is made nonblocking and given to the peer stream. Peer is either a
/// stream the operation owns and hands to the handler (completion
/// `void(error_code, Stream)`) or a pointer to the caller's stream
/// (completion `void(error_code)`).
template <class Peer, class Handler, class IoExecutor>
class accept_operation final
    : public handler_operation<accept_operation<Peer, Handler, IoExecutor>, Handler, IoExecutor> {
    static constexpr bool owns_peer = !std::is_pointer_v<Peer>;

public:
    accept_operation(rpoll_service& service, std::shared_ptr<socket_impl> impl, Peer peer,
                     Handler handler, const IoExecutor& io_executor)
        : accept_operation::handler_operation(wait_kind::read, service, std::move(impl),
                                              std::move(handler), io_executor),
          peer_(std::move(peer)) {}

    bool perform(socket_impl& impl) override {
        const socket_ops& ops = *impl.socket_.ops();
        const int fd = ops.accept(impl.socket_.get(), nullptr, nullptr, this->ec_);
        if (this->ec_ == boost::asio::error::would_block || this->ec_ == boost::asio::error::try_again)
            return false;
        // A connection the peer gave up on before we took it is not an error
        // of the listener: keep waiting for the next, as Asio does.
        if (this->ec_ == boost::asio::error::connection_aborted)
            return false;
        if (this->ec_)
            return true;
        unique_socket accepted(fd, ops);
        this->ec_ = ops.set_nonblocking(fd, true);
        if (this->ec_) {
            // Not closed here: an rsocket's rclose can wait for the peer,
            // and this runs on the handler's executor.
            (void)this->service_.dispose(std::move(accepted));
            return true;
        }
        auto& peer_impl = stream_access::impl(peer());
        this->service_.attach(peer_impl, std::move(accepted), impl.transport_,
                              socket_impl::phase::connected);
        return true;
    }

    auto results() {
        if constexpr (owns_peer)
            return std::tuple(this->ec_, std::move(peer_));
        else
            return std::tuple(this->ec_);
    }

private:
    auto& peer() noexcept {
        if constexpr (owns_peer)
            return peer_;
        else
            return *peer_;
    }

    Peer peer_;
};

} // namespace corio::detail
