#include "transport_under_test.hpp"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <corio/rdma_available.hpp>
#include <corio/socket_base.hpp>

namespace corio::test {

corio::transport transport_under_test() {
    const char* name = std::getenv("CORIO_TEST_TRANSPORT");
    if (name == nullptr || std::string_view(name) == "tcp")
        return corio::transport::tcp;
    if (std::string_view(name) == "rsocket")
        return corio::transport::rsocket;
    throw std::invalid_argument("CORIO_TEST_TRANSPORT must be tcp or rsocket");
}

corio::poll_mode poll_mode_under_test() {
    const char* name = std::getenv("CORIO_TEST_POLL_MODE");
    if (name == nullptr || std::string_view(name) == "thread")
        return corio::poll_mode::thread;
    if (std::string_view(name) == "busy")
        return corio::poll_mode::busy;
    throw std::invalid_argument("CORIO_TEST_POLL_MODE must be thread or busy");
}

bool ipv6_under_test() {
    const char* name = std::getenv("CORIO_TEST_FAMILY");
    if (name == nullptr || std::string_view(name) == "ipv4")
        return false;
    if (std::string_view(name) == "ipv6")
        return true;
    throw std::invalid_argument("CORIO_TEST_FAMILY must be ipv4 or ipv6");
}

boost::asio::ip::address address_under_test() {
    const bool ipv6 = ipv6_under_test();
    if (transport_under_test() == corio::transport::tcp)
        return boost::asio::ip::make_address(ipv6 ? "::1" : "127.0.0.1");
    const char* variable = ipv6 ? "CORIO_RDMA_ADDR6" : "CORIO_RDMA_ADDR";
    const char* text = std::getenv(variable);
    if (text == nullptr)
        throw std::invalid_argument(std::string(variable) +
                                    " must name an address of the RDMA device");
    const auto address = boost::asio::ip::make_address(text);
    if (address.is_v6() != ipv6)
        throw std::invalid_argument(std::string(variable) + " names an address of the wrong family");
    return address;
}

std::optional<std::string> tcp_only() {
    if (transport_under_test() == corio::transport::tcp)
        return std::nullopt;
    return "checks the tcp transport only";
}

transport_available::transport_available() {
    if (transport_under_test() != corio::transport::rsocket || corio::rdma_available())
        return;
    std::puts("SKIP: the rsocket transport needs an RDMA device and this host has none; "
              "run this test through test/softroce/guest-run");
    std::fflush(stdout);
    std::_Exit(77);
}

namespace {

// By value: the coroutine starts after the caller's temporaries are gone.
boost::asio::awaitable<std::pair<corio::stream, corio::stream>>
connected_pair(boost::asio::ip::tcp::endpoint where, corio::transport transport) {
    auto executor = co_await boost::asio::this_coro::executor;
    corio::acceptor acceptor(executor, where, transport);
    corio::stream client(executor, transport);
    // Both at once: an rsocket connect completes only when the server
    // side's raccept runs.
    using namespace boost::asio::experimental::awaitable_operators;
    corio::stream server =
        co_await (acceptor.async_accept(boost::asio::use_awaitable) &&
                  client.async_connect(acceptor.local_endpoint(), boost::asio::use_awaitable));
    co_return std::pair(std::move(client), std::move(server));
}

} // namespace

boost::asio::awaitable<std::pair<corio::stream, corio::stream>> make_stream_pair() {
    return connected_pair(any_port_endpoint(), transport_under_test());
}

boost::asio::awaitable<std::pair<corio::stream, corio::stream>> make_tcp_stream_pair() {
    return connected_pair({boost::asio::ip::address_v4::loopback(), 0}, corio::transport::tcp);
}

boost::asio::awaitable<std::pair<corio::stream, corio::stream>>
make_mappable_stream_pair(int iomap_size) {
    auto executor = co_await boost::asio::this_coro::executor;
    const auto transport = transport_under_test();
    corio::acceptor acceptor(executor);
    acceptor.open(transport, any_port_endpoint().protocol());
    acceptor.set_option(corio::socket_base::iomap_size(iomap_size));
    acceptor.bind(any_port_endpoint());
    acceptor.listen();
    corio::stream client(executor);
    client.open(transport, any_port_endpoint().protocol());
    client.set_option(corio::socket_base::iomap_size(iomap_size));
    using namespace boost::asio::experimental::awaitable_operators;
    corio::stream server =
        co_await (acceptor.async_accept(boost::asio::use_awaitable) &&
                  client.async_connect(acceptor.local_endpoint(), boost::asio::use_awaitable));
    co_return std::pair(std::move(client), std::move(server));
}

} // namespace corio::test
