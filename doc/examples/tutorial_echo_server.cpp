// tutorial_echo_server [ADDRESS]: step 1 of doc/tutorial.md. An echo server with one
// coroutine per connection and eight clients, all on an io_context run by two threads; each
// connection, and the listener, has a strand of its own.
#include <atomic>
#include <exception>
#include <iostream>
#include <string>
#include <thread>

#include <boost/asio.hpp>

#include <corio/acceptor.hpp>
#include <corio/stream.hpp>

namespace asio = boost::asio;
using asio::use_awaitable;

constexpr int client_count = 8;
constexpr int message_count = 50;

std::atomic<int> echoed{0};
std::atomic<bool> failed{false};

// The completion handler of every co_spawn: a coroutine that throws stops the whole run.
auto report_to(asio::io_context& io) {
    return [&io](std::exception_ptr e) {
        if (!e)
            return;
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& x) {
            std::cerr << "tutorial_echo_server: " << x.what() << '\n';
        }
        failed = true;
        io.stop();
    };
}

// One connection: echoes until the client's orderly close, which the read reports as eof.
asio::awaitable<void> echo(corio::stream peer) {
    char data[256];
    for (;;) {
        auto [ec, n] = co_await peer.async_read_some(asio::buffer(data), as_tuple(use_awaitable));
        if (ec == asio::error::eof)
            co_return;
        if (ec)
            throw boost::system::system_error(ec, "read");
        co_await asio::async_write(peer, asio::buffer(data, n), use_awaitable);
    }
}

// Accepts each connection into a stream on a new strand and gives it a coroutine there: one
// connection's steps never run at the same time, different connections' do.
asio::awaitable<void> listen(asio::io_context& io, corio::acceptor& acceptor) {
    for (int i = 0; i < client_count; ++i) {
        corio::stream peer(asio::make_strand(io));
        co_await acceptor.async_accept(peer, use_awaitable);
        const auto strand = peer.get_executor();
        asio::co_spawn(strand, echo(std::move(peer)), report_to(io));
    }
}

asio::awaitable<void> client(asio::ip::tcp::endpoint server, int id) {
    corio::stream stream(co_await asio::this_coro::executor);
    co_await stream.async_connect(server, use_awaitable);
    for (int i = 0; i < message_count; ++i) {
        const std::string text = "client " + std::to_string(id) + " message " + std::to_string(i);
        std::string reply(text.size(), '\0');
        co_await asio::async_write(stream, asio::buffer(text), use_awaitable);
        co_await asio::async_read(stream, asio::buffer(reply), use_awaitable);
        if (reply != text)
            throw std::runtime_error("sent '" + text + "', got back '" + reply + "'");
        ++echoed;
    }
    if (id == 0)
        std::cout << "clients connected over " << corio::to_string(stream.transport()) << '\n';
}

int main(int argc, char** argv) try {
    asio::io_context io(2); // the hint: two threads will run it
    const asio::ip::tcp::endpoint local(asio::ip::make_address(argc > 1 ? argv[1] : "127.0.0.1"),
                                        0);
    corio::acceptor acceptor(asio::make_strand(io), local);
    asio::co_spawn(acceptor.get_executor(), listen(io, acceptor), report_to(io));
    for (int id = 0; id < client_count; ++id)
        asio::co_spawn(asio::make_strand(io), client(acceptor.local_endpoint(), id), report_to(io));

    std::thread second([&io] { io.run(); });
    io.run();
    second.join();
    if (failed)
        return 1;
    std::cout << client_count << " clients had " << echoed << " messages echoed, on 2 threads\n";
    return echoed == client_count * message_count ? 0 : 1;
} catch (const std::exception& e) {
    std::cerr << "tutorial_echo_server: " << e.what() << '\n';
    return 1;
}
