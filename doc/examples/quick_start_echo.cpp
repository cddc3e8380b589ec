// quick_start_echo [ADDRESS]: a coroutine echo server and its client on corio::stream.
#include <iostream>
#include <string>

#include <boost/asio.hpp>

#include <corio/acceptor.hpp>
#include <corio/stream.hpp>

namespace asio = boost::asio;
using asio::use_awaitable;

asio::awaitable<void> serve(corio::acceptor& acceptor) {
    corio::stream peer = co_await acceptor.async_accept(use_awaitable);
    char data[64];
    for (;;) { // until the client closes: the read then ends with eof
        auto [ec, n] = co_await peer.async_read_some(asio::buffer(data), as_tuple(use_awaitable));
        if (ec)
            co_return;
        co_await asio::async_write(peer, asio::buffer(data, n), use_awaitable);
    }
}

asio::awaitable<void> client(asio::ip::tcp::endpoint server) {
    corio::stream stream(co_await asio::this_coro::executor); // corio::transport::automatic
    co_await stream.async_connect(server, use_awaitable);
    std::string text = "hello, corio", reply(text.size(), '\0');
    co_await asio::async_write(stream, asio::buffer(text), use_awaitable);
    co_await asio::async_read(stream, asio::buffer(reply), use_awaitable);
    std::cout << "echoed over " << corio::to_string(stream.transport()) << ": " << reply << '\n';
}

int main(int argc, char** argv) try {
    asio::io_context io;
    corio::acceptor acceptor(io, {asio::ip::make_address(argc > 1 ? argv[1] : "127.0.0.1"), 0});
    auto rethrow = [](std::exception_ptr e) {
        if (e)
            std::rethrow_exception(e);
    };
    asio::co_spawn(io, serve(acceptor), rethrow);
    asio::co_spawn(io, client(acceptor.local_endpoint()), rethrow);
    io.run();
} catch (const std::exception& e) {
    std::cerr << "quick_start_echo: " << e.what() << '\n';
    return 1;
}
