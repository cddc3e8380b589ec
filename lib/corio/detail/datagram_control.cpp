#include "corio/detail/datagram_control.hpp"

#include <mutex>

#include <boost/asio/error.hpp>

#include <corio/detail/socket_impl.hpp>
#include <corio/detail/try_call.hpp>
#include <corio/rpoll_service.hpp>

namespace corio::detail {

using boost::system::error_code;

error_code open_for(rpoll_service& service, socket_impl& impl, transport t,
                    const boost::asio::ip::udp& protocol) {
    {
        std::lock_guard io_lock(impl.io_mutex_);
        if (impl.socket_.is_valid())
            return boost::asio::error::already_open;
    }
    t = resolve_datagram_transport(t);
    const socket_ops& ops = ops_for(t);
    error_code ec;
    unique_socket socket(ops.open(protocol.family(), SOCK_DGRAM | SOCK_NONBLOCK, 0, ec), ops);
    if (ec)
        return ec;
    service.attach(impl, std::move(socket), t, socket_impl::phase::open);
    return {};
}

error_code connect_datagram(rpoll_service& service, socket_impl& impl, transport t,
                            const boost::asio::ip::udp::endpoint& peer) {
    bool open = false;
    {
        std::lock_guard io_lock(impl.io_mutex_);
        open = impl.socket_.is_valid();
    }
    if (!open) {
        if (const auto ec = open_for(service, impl, t, peer.protocol()))
            return ec;
    }
    std::lock_guard io_lock(impl.io_mutex_);
    if (!impl.socket_.is_valid())
        return boost::asio::error::bad_descriptor;
    const auto ec = impl.socket_.ops()->connect_datagram(impl.socket_.get(), peer.data(),
                                                static_cast<socklen_t>(peer.size()));
    if (!ec)
        impl.phase_ = socket_impl::phase::connected;
    return ec;
}

error_code check_datagram_send(socket_impl& impl, std::size_t size, int family,
                               bool has_destination) {
    std::lock_guard io_lock(impl.io_mutex_);
    if (!impl.socket_.is_valid())
        return boost::asio::error::bad_descriptor;
    if (size > impl.socket_.ops()->max_datagram(family))
        return boost::asio::error::message_size;
    if (!has_destination && impl.phase_ != socket_impl::phase::connected)
        return boost::asio::error::not_connected;
    return {};
}

std::size_t datagram_call(socket_impl& impl, wait_kind kind, const iovec* iov, int count,
                          boost::asio::ip::udp::endpoint* peer, error_code& ec) {
    const socket_ops& ops = *impl.socket_.ops();
    const int s = impl.socket_.get();
    if (kind == wait_kind::write)
        return ops.sendto(s, iov, count, peer ? peer->data() : nullptr,
                          peer ? static_cast<socklen_t>(peer->size()) : 0, ec);
    socklen_t len = peer ? static_cast<socklen_t>(peer->capacity()) : 0;
    const std::size_t n = ops.recvfrom(s, iov, count, peer ? peer->data() : nullptr,
                                       peer ? &len : nullptr, ec);
    if (peer && !ec)
        peer->resize(len);
    return n;
}

std::size_t blocking_datagram(rpoll_service& service, socket_impl& impl, wait_kind kind, const iovec* iov, int count,
                              boost::asio::ip::udp::endpoint* peer, error_code& ec) {
    const auto call = [&](error_code& call_ec) {
        return datagram_call(impl, kind, iov, count, peer, call_ec);
    };
    // non_blocking(true): one call, as a stream's read_some makes.
    if (impl.non_blocking_)
        return try_call(impl, kind, call, ec);
    return blocking_call(service, impl, kind, call, ec);
}

} // namespace corio::detail
