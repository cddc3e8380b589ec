// tutorial_http_beast [ADDRESS]: step 3 of doc/tutorial.md. HTTP/1.1 with Boost.Beast over
// corio::stream: a server that answers every request on a kept-alive connection, and a client
// that sends it two.
#include <iostream>
#include <stdexcept>
#include <string>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <corio/acceptor.hpp>
#include <corio/stream.hpp>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::use_awaitable;

// What Beast's algorithms ask of a stream, corio::stream has: Beast takes it as it is.
static_assert(beast::is_async_read_stream<corio::stream>::value);
static_assert(beast::is_async_write_stream<corio::stream>::value);
static_assert(beast::is_sync_read_stream<corio::stream>::value);
static_assert(beast::is_sync_write_stream<corio::stream>::value);

asio::awaitable<void> serve(corio::acceptor& acceptor) {
    corio::stream peer = co_await acceptor.async_accept(use_awaitable);
    beast::flat_buffer buffer;
    for (;;) {
        http::request<http::string_body> request;
        auto [ec, n] = co_await http::async_read(peer, buffer, request, as_tuple(use_awaitable));
        if (ec == http::error::end_of_stream) // the client closed between requests
            co_return;
        if (ec)
            throw boost::system::system_error(ec, "http read");
        http::response<http::string_body> response(http::status::ok, request.version());
        response.set(http::field::content_type, "text/plain");
        response.keep_alive(request.keep_alive());
        response.body() = std::string(request.target()) + " over " +
                          std::string(corio::to_string(peer.transport())) + "\n";
        response.prepare_payload();
        co_await http::async_write(peer, response, use_awaitable);
    }
}

asio::awaitable<void> get(asio::ip::tcp::endpoint server) {
    corio::stream stream(co_await asio::this_coro::executor);
    co_await stream.async_connect(server, use_awaitable);
    beast::flat_buffer buffer;
    for (const char* target : {"/one", "/two"}) {
        http::request<http::empty_body> request(http::verb::get, target, 11);
        request.set(http::field::host, server.address().to_string());
        co_await http::async_write(stream, request, use_awaitable);
        http::response<http::string_body> response;
        co_await http::async_read(stream, buffer, response, use_awaitable);
        if (response.result() != http::status::ok || !response.keep_alive())
            throw std::runtime_error("unexpected response to " + std::string(target));
        std::cout << response.result_int() << ' ' << response.reason() << ' ' << response.body();
    }
    stream.shutdown(corio::stream::shutdown_send); // the server's next read is end_of_stream
}

int main(int argc, char** argv) try {
    asio::io_context io;
    corio::acceptor acceptor(io, {asio::ip::make_address(argc > 1 ? argv[1] : "127.0.0.1"), 0});
    auto rethrow = [](std::exception_ptr e) {
        if (e)
            std::rethrow_exception(e);
    };
    asio::co_spawn(io, serve(acceptor), rethrow);
    asio::co_spawn(io, get(acceptor.local_endpoint()), rethrow);
    io.run();
} catch (const std::exception& e) {
    std::cerr << "tutorial_http_beast: " << e.what() << '\n';
    return 1;
}
