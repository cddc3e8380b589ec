// A datagram ping client: sends COUNT pings to the server, each waiting at
// most a second for its echo, and prints each round trip.
// usage: datagram_ping_client ADDRESS PORT COUNT

#include <chrono>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <corio/datagram_socket.hpp>

namespace asio = boost::asio;
using boost::asio::ip::udp;
using namespace boost::asio::experimental::awaitable_operators;

asio::awaitable<int> ping(corio::datagram_socket& socket, int count) {
    asio::steady_timer timer(socket.get_executor());
    for (int i = 0; i < count; ++i) {
        const std::string message = "ping " + std::to_string(i);
        const auto start = std::chrono::steady_clock::now();
        co_await socket.async_send(asio::buffer(message), asio::use_awaitable);
        char echo[64];
        timer.expires_after(std::chrono::seconds(1));
        // Whichever finishes first cancels the other: a lost datagram costs
        // one second, not a hang.
        auto got = co_await (socket.async_receive(asio::buffer(echo), asio::use_awaitable) ||
                             timer.async_wait(asio::use_awaitable));
        if (got.index() == 1 || std::string(echo, std::get<0>(got)) != message) {
            std::cerr << "no echo for " << message << '\n';
            co_return 1;
        }
        const auto usec = std::chrono::duration_cast<std::chrono::microseconds>(
            std::chrono::steady_clock::now() - start);
        std::cout << message << ": " << usec.count() << " us\n";
    }
    co_return 0;
}

int main(int argc, char* argv[]) {
    if (argc != 4) {
        std::cerr << "usage: datagram_ping_client ADDRESS PORT COUNT\n";
        return 2;
    }
    try {
        asio::io_context io;
        corio::datagram_socket socket(io);
        socket.connect({asio::ip::make_address(argv[1]),
                        static_cast<unsigned short>(std::atoi(argv[2]))});
        auto result = asio::co_spawn(io, ping(socket, std::atoi(argv[3])), asio::use_future);
        io.run();
        return result.get();
    } catch (const std::exception& e) {
        std::cerr << "datagram_ping_client: " << e.what() << '\n';
        return 1;
    }
}
