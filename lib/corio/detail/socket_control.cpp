#include "corio/detail/socket_control.hpp"

#include <chrono>
#include <thread>

#include <poll.h>
#include <sys/socket.h>

#include <boost/asio/error.hpp>

#include <corio/detail/framed_tcp_ops.hpp>
#include <corio/detail/socket_impl.hpp>
#include <corio/detail/try_call.hpp>
#include <corio/detail/try_iowrite.hpp>
#include <corio/error.hpp>
#include <corio/rpoll_service.hpp>

namespace corio::detail {

using boost::system::error_code;

error_code open_socket(rpoll_service& service, socket_impl& impl, transport t, int family) {
    {
        std::lock_guard io_lock(impl.io_mutex_);
        if (impl.socket_.is_valid())
            return boost::asio::error::already_open;
    }
    // udp names kernel datagram sockets: a stream cannot be one.
    if (t == transport::udp)
        return boost::asio::error::invalid_argument;
    t = resolve_transport(t);
    const socket_ops& ops = ops_for(t);
    error_code ec;
    unique_socket socket(ops.open(family, SOCK_STREAM | SOCK_NONBLOCK, 0, ec), ops);
    if (ec)
        return ec;
    service.attach(impl, std::move(socket), t, socket_impl::phase::open);
    return {};
}

error_code start_connect(rpoll_service& service, socket_impl& impl, transport t,
                         const boost::asio::ip::tcp::endpoint& peer, connect_state& state) {
    state = connect_state::finished;
    bool open = false;
    {
        std::lock_guard io_lock(impl.io_mutex_);
        open = impl.socket_.is_valid();
    }
    if (!open) {
        if (const auto ec = open_socket(service, impl, t, peer.protocol().family()))
            return ec;
    }
    std::lock_guard io_lock(impl.io_mutex_);
    // close() may run on another thread between the open above and here (the
    // lock was let go in between): the descriptor is gone, and connecting
    // would dereference its cleared ops.
    if (!impl.socket_.is_valid())
        return boost::asio::error::bad_descriptor;
    if (impl.phase_ != socket_impl::phase::open)
        return impl.phase_ == socket_impl::phase::connected ? boost::asio::error::already_connected
                                                             : boost::asio::error::invalid_argument;
    framed_tcp::adopt_if_requested(impl.socket_);
    return retry_connect(service, impl, peer, state);
}

error_code retry_connect(rpoll_service& service, socket_impl& impl,
                         const boost::asio::ip::tcp::endpoint& peer, connect_state& state) {
    const auto ec = impl.socket_.ops()->connect(impl.socket_.get(), peer.data(),
                                                static_cast<socklen_t>(peer.size()));
    // EAGAIN is EWOULDBLOCK here: from rsockets it means "not started,
    // retry"; from a kernel TCP connect, no local port left, an error.
    const bool deferred = ec == boost::asio::error::try_again && impl.transport_ == transport::rsocket;
    const bool waits = deferred || ec == boost::asio::error::in_progress;
    if (deferred != (state == connect_state::deferred))
        service.set_retry_connect(impl, deferred);
    if (waits) {
        impl.phase_ = socket_impl::phase::connecting;
        state = deferred ? connect_state::deferred : connect_state::in_progress;
        return {};
    }
    state = connect_state::finished;
    if (!ec)
        impl.phase_ = socket_impl::phase::connected;
    return ec;
}

error_code bind_socket(socket_impl& impl, const boost::asio::ip::tcp::endpoint& local) {
    std::lock_guard io_lock(impl.io_mutex_);
    if (!impl.socket_.is_valid())
        return boost::asio::error::bad_descriptor;
    return impl.socket_.ops()->bind(impl.socket_.get(), local.data(),
                                    static_cast<socklen_t>(local.size()));
}

error_code listen_socket(rpoll_service& service, socket_impl& impl, int backlog) {
    {
        std::lock_guard io_lock(impl.io_mutex_);
        if (!impl.socket_.is_valid())
            return boost::asio::error::bad_descriptor;
        framed_tcp::adopt_if_requested(impl.socket_);
        if (const auto ec = impl.socket_.ops()->listen(impl.socket_.get(), backlog))
            return ec;
    }
    impl.phase_ = socket_impl::phase::listening;
    service.set_retry_accept(impl, impl.transport_ == transport::rsocket);
    return {};
}


boost::asio::ip::tcp::endpoint socket_endpoint(socket_impl& impl, bool remote, error_code& ec) {
    boost::asio::ip::tcp::endpoint endpoint;
    std::lock_guard io_lock(impl.io_mutex_);
    if (!impl.socket_.is_valid()) {
        ec = boost::asio::error::bad_descriptor;
        return endpoint;
    }
    socklen_t len = static_cast<socklen_t>(endpoint.capacity());
    const socket_ops& ops = *impl.socket_.ops();
    ec = remote ? ops.getpeername(impl.socket_.get(), endpoint.data(), &len)
                : ops.getsockname(impl.socket_.get(), endpoint.data(), &len);
    if (!ec)
        endpoint.resize(len);
    return endpoint;
}

std::size_t blocking_call(rpoll_service& service, socket_impl& impl, wait_kind kind,
                          function_ref<std::size_t(error_code&)> call, error_code& ec) {
    for (;;) {
        // [0] the socket, [1] the eventfd close() signals.
        pollfd fds[2] = {};
        const socket_ops* ops_used = nullptr;
        bool shutting_down = false;
        {
            std::lock_guard io_lock(impl.io_mutex_);
            if (!impl.socket_.is_valid()) {
                ec = boost::asio::error::bad_descriptor;
                return 0;
            }
            ops_used = impl.socket_.ops();
            // No call into a socket while its rshutdown runs (socket_impl::
            // shutting_down_): a blocking caller simply waits it out.
            shutting_down = impl.shutting_down_.load(std::memory_order_acquire) > 0;
            if (!shutting_down) {
                const std::size_t n = call(ec);
                if (ec != boost::asio::error::would_block && ec != boost::asio::error::try_again)
                    return n;
                fds[0] = {impl.socket_.get(),
                          static_cast<short>(kind == wait_kind::read ? POLLIN : POLLOUT), 0};
            }
        }
        if (shutting_down) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            continue;
        }
        // The same rule as for the service's own waits: the descriptor is
        // not closed under this rpoll; a close() from another thread wakes
        // it and leaves the descriptor to end_blocking_wait.
        int wake_fd = -1;
        if ((ec = service.begin_blocking_wait(impl, wake_fd))) {
            if (ec != boost::asio::error::try_again)
                return 0;
            continue; // a shutdown started meanwhile: wait it out above
        }
        fds[1] = {wake_fd, POLLIN, 0};
        ops_used->poll(fds, 2, poll_timeout::infinite, ec);
        if (!service.end_blocking_wait(impl)) {
            ec = boost::asio::error::operation_aborted;
            return 0;
        }
        if (ec && ec != boost::asio::error::interrupted)
            return 0;
    }
}

std::size_t blocking_transfer(rpoll_service& service, socket_impl& impl, wait_kind kind,
                              const iovec* iov, int count, std::size_t total, error_code& ec,
                              int flags) {
    if (total == 0) {
        ec.clear();
        return 0;
    }
    return blocking_call(
        service, impl, kind,
        [&](error_code& call_ec) {
            return transfer_once(*impl.socket_.ops(), impl.socket_.get(), kind, iov, count, flags,
                                 call_ec);
        },
        ec);
}

std::size_t blocking_iowrite(rpoll_service& service, socket_impl& impl, const void* data,
                             std::size_t size, off_t offset, error_code& ec) {
    std::size_t written = 0;
    return blocking_call(
        service, impl, wait_kind::write,
        [&](error_code& call_ec) { return iowrite_rest(impl, data, size, offset, written, call_ec); },
        ec);
}

error_code set_non_blocking(socket_impl& impl, bool mode) {
    std::lock_guard io_lock(impl.io_mutex_);
    if (!impl.socket_.is_valid())
        return boost::asio::error::bad_descriptor;
    impl.non_blocking_ = mode;
    return {};
}

std::size_t socket_available(socket_impl& impl, error_code& ec) {
    std::lock_guard io_lock(impl.io_mutex_);
    if (!impl.socket_.is_valid()) {
        ec = boost::asio::error::bad_descriptor;
        return 0;
    }
    return impl.socket_.ops()->available(impl.socket_.get(), ec);
}

error_code check_option_allowed(const socket_impl& impl, bool rdma_only) {
    if (impl.phase_ == socket_impl::phase::closed)
        return boost::asio::error::bad_descriptor;
    if (rdma_only && impl.phase_ != socket_impl::phase::open)
        return corio::error::option_after_connect;
    return {};
}

} // namespace corio::detail
