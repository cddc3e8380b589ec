#include "connection_setup.hpp"

#include <algorithm>
#include <sstream>
#include <string>
#include <string_view>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <corio/memlock_limit.hpp>
#include <corio/socket_base.hpp>

#include "peer_watchdog.hpp"
#include "run_error.hpp"
#include "transfer_context.hpp"

namespace coriostream {

namespace {

std::string describe(const boost::asio::ip::tcp::endpoint& endpoint) {
    std::ostringstream text;
    text << endpoint;
    return text.str();
}

/// What went wrong, in words. rsockets pin their buffers and queue pair:
/// ENOMEM there is nearly always RLIMIT_MEMLOCK, which the user can fix.
std::string explain(corio::transport transport, const boost::system::error_code& ec) {
    if (transport == corio::transport::rsocket && ec == boost::system::errc::not_enough_memory)
        return corio::memlock_diagnostic();
    return ec.message();
}

[[noreturn]] void fail(corio::transport transport, std::string_view call,
                       const boost::system::error_code& ec, std::string_view detail = {}) {
    auto message = call_name(transport, call);
    if (!detail.empty())
        message += " " + std::string(detail);
    throw run_error(message + ": " + explain(transport, ec));
}

template <class Socket, class Option>
void set(Socket& socket, corio::transport transport, const Option& option,
         std::string_view name) {
    boost::system::error_code ec;
    socket.set_option(option, ec);
    if (ec)
        fail(transport, "setsockopt", ec, name);
}

// The options of riostream's set_options that kernel sockets and rsockets
// share. riostream passes -B as an int; corio refuses what Linux could not
// double, so the largest sizes are clamped to what it can.
template <class Socket>
void set_common_options(Socket& socket, const socket_setup& setup) {
    const auto buffer = static_cast<int>(std::min<std::size_t>(
        setup.buffer_size, corio::socket_base::send_buffer_size::max_value));
    set(socket, setup.transport, corio::socket_base::send_buffer_size(buffer), "SO_SNDBUF");
    set(socket, setup.transport, corio::socket_base::receive_buffer_size(buffer), "SO_RCVBUF");
    set(socket, setup.transport, corio::socket_base::no_delay(true), "TCP_NODELAY");
}

// The options rsockets take only before connect or listen. iomap_size is
// one on tcp too: there it moves the connection to corio's framed
// emulation of riomap and riowrite, doc/tcp-transport.md.
template <class Socket>
void set_rdma_options(Socket& socket, const socket_setup& setup) {
    if (setup.iomap)
        set(socket, setup.transport, corio::socket_base::iomap_size(1), "RDMA_IOMAPSIZE");
    if (setup.transport != corio::transport::rsocket)
        return;
    if (setup.inline_size) {
        // -i is an int in riostream; the device lowers what it cannot hold
        // anyway, and corio's limit is rsockets' 16 bits.
        const auto size = static_cast<int>(std::min<std::size_t>(
            *setup.inline_size, corio::socket_base::inline_size::max_value));
        set(socket, setup.transport, corio::socket_base::inline_size(size), "RDMA_INLINE");
    }
}

void set_keepalive(corio::stream& stream, const socket_setup& setup) {
    if (setup.keepalive_seconds == 0)
        return;
    set(stream, setup.transport,
        corio::socket_base::keep_alive(
            true, std::chrono::seconds(static_cast<std::chrono::seconds::rep>(
                      setup.keepalive_seconds))),
        "SO_KEEPALIVE");
}

std::string timeout_message(std::string_view waiting_for, std::chrono::seconds timeout) {
    return "timed out: " + std::string(waiting_for) + " within " +
           std::to_string(timeout.count()) + " s (--timeout)";
}

} // namespace

boost::asio::awaitable<corio::stream>
connect_stream(const boost::asio::any_io_executor& executor,
               const std::vector<boost::asio::ip::tcp::endpoint>& endpoints,
               const socket_setup& setup, std::chrono::seconds timeout) {
    std::string last_failure = "no address to connect to";
    for (const auto& endpoint : endpoints) {
        corio::stream stream(executor, setup.transport);
        boost::system::error_code ec;
        stream.open(setup.transport, endpoint.protocol(), ec);
        if (ec)
            fail(setup.transport, "socket", ec);
        set_common_options(stream, setup);
        set_rdma_options(stream, setup);
        if (setup.client_bind) {
            const boost::asio::ip::tcp::endpoint local(*setup.client_bind, 0);
            stream.bind(local, ec);
            if (ec)
                fail(setup.transport, "bind", ec, describe(local));
        }

        peer_watchdog watchdog(executor, timeout, [&stream] {
            boost::system::error_code ignored;
            stream.close(ignored);
        });
        co_await stream.async_connect(endpoint,
                                      boost::asio::redirect_error(boost::asio::use_awaitable, ec));
        if (!ec) {
            set_keepalive(stream, setup);
            co_return stream;
        }
        last_failure = watchdog.expired()
                           ? timeout_message("no connection to " + describe(endpoint), timeout)
                           : call_name(setup.transport, "connect") + " " + describe(endpoint) +
                                 ": " + explain(setup.transport, ec);
    }
    throw run_error(last_failure);
}

corio::acceptor open_listener(const boost::asio::any_io_executor& executor,
                              const boost::asio::ip::tcp::endpoint& local,
                              const socket_setup& setup) {
    corio::acceptor listener(executor);
    boost::system::error_code ec;
    listener.open(setup.transport, local.protocol(), ec);
    if (ec)
        fail(setup.transport, "socket", ec);
    set(listener, setup.transport, corio::socket_base::reuse_address(true), "SO_REUSEADDR");
    set_common_options(listener, setup);
    set_rdma_options(listener, setup);
    listener.bind(local, ec);
    if (ec)
        fail(setup.transport, "bind", ec, describe(local));
    listener.listen(boost::asio::socket_base::max_listen_connections, ec);
    if (ec)
        fail(setup.transport, "listen", ec);
    return listener;
}

boost::asio::awaitable<corio::stream> accept_stream(corio::acceptor& listener,
                                                    const boost::asio::any_io_executor& stream_executor,
                                                    const socket_setup& setup,
                                                    std::chrono::seconds timeout) {
    corio::stream stream(stream_executor, setup.transport);
    boost::system::error_code ec;
    {
        peer_watchdog watchdog(listener.get_executor(), timeout, [&listener] {
            boost::system::error_code ignored;
            listener.cancel(ignored);
        });
        co_await listener.async_accept(stream,
                                       boost::asio::redirect_error(boost::asio::use_awaitable, ec));
        if (ec && watchdog.expired())
            throw run_error(timeout_message("no connection from the peer", timeout));
    }
    if (ec)
        fail(setup.transport, "accept", ec);
    // riostream applies set_options to the accepted socket too; of its
    // options, only these still take effect there.
    set_common_options(stream, setup);
    set_keepalive(stream, setup);
    co_return stream;
}

} // namespace coriostream
