#pragma once

#include <memory>
#include <tuple>
#include <type_traits>

#include <boost/asio/error.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <corio/detail/accept_admission.hpp>
#include <corio/detail/handler_operation.hpp>
#include <corio/detail/stream_access.hpp>

namespace corio::detail {

/// async_accept: one nonblocking accept on the listening socket; a peer the
/// acceptor's admission refuses (filter, limit on open streams) is closed
/// and counted, and the accept takes the next; an admitted socket is made
/// nonblocking and given to the peer stream with its open slot. Peer is either a
/// stream the operation owns and hands to the handler (completion
/// `void(error_code, Stream)`) or a pointer to the caller's stream
/// (completion `void(error_code)`).
template <class Peer, class Handler, class IoExecutor>
class accept_operation final
    : public handler_operation<accept_operation<Peer, Handler, IoExecutor>, Handler, IoExecutor> {
    static constexpr bool owns_peer = !std::is_pointer_v<Peer>;

public:
    accept_operation(rpoll_service& service, std::shared_ptr<socket_impl> impl,
                     std::shared_ptr<accept_admission> admission, Peer peer, Handler handler,
                     const IoExecutor& io_executor)
        : accept_operation::handler_operation(wait_kind::read, service, std::move(impl),
                                              std::move(handler), io_executor),
          admission_(std::move(admission)), peer_(std::move(peer)) {}

    bool perform(socket_impl& impl) override {
        const socket_ops& ops = *impl.socket_.ops();
        // Refused connections are closed and the accept goes on to the
        // next; a bound on how many one run takes keeps a flood of refused
        // peers from holding the executor (the listener stays readable, so
        // the wait ends again at once).
        for (int refused = 0; refused < max_refused_per_run; ++refused) {
            boost::asio::ip::tcp::endpoint peer_endpoint;
            socklen_t length = static_cast<socklen_t>(peer_endpoint.capacity());
            const int fd = ops.accept(impl.socket_.get(), peer_endpoint.data(), &length, this->ec_);
            if (this->ec_ == boost::asio::error::would_block ||
                this->ec_ == boost::asio::error::try_again)
                return false;
            // A connection the peer gave up on before we took it is not an
            // error of the listener: keep waiting for the next, as Asio does.
            if (this->ec_ == boost::asio::error::connection_aborted)
                return false;
            if (this->ec_)
                return true;
            unique_socket accepted(fd, ops);
            std::shared_ptr<void> slot;
            if (length <= peer_endpoint.capacity())
                peer_endpoint.resize(length);
            if (!admission_->admits(peer_endpoint) || !(slot = admission_->take_slot())) {
                // Not closed here: an rsocket's rclose can wait for the peer,
                // and this runs on the handler's executor.
                (void)this->service_.dispose(std::move(accepted));
                admission_->count_refused();
                continue;
            }
            this->ec_ = ops.set_nonblocking(fd, true);
            if (this->ec_) {
                (void)this->service_.dispose(std::move(accepted));
                return true;
            }
            auto& peer_impl = stream_access::impl(peer());
            this->service_.attach(peer_impl, std::move(accepted), impl.transport_,
                                  socket_impl::phase::connected);
            peer_impl.open_slot_ = std::move(slot);
            return true;
        }
        return false;
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

    static constexpr int max_refused_per_run = 64;

    std::shared_ptr<accept_admission> admission_;
    Peer peer_;
};

} // namespace corio::detail
