// A datagram ping server: echoes every datagram back to its sender, until it
// has echoed COUNT of them. usage: datagram_ping_server ADDRESS PORT COUNT
//
// On a host with an RDMA device it uses rsockets, else kernel UDP
// (corio::transport::automatic); the code is the same.

#include <cstdlib>
#include <exception>
#include <iostream>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <corio/datagram_socket.hpp>

namespace asio = boost::asio;
using boost::asio::ip::udp;

asio::awaitable<void> serve(corio::datagram_socket& socket, int count) {
    char data[2048];
    for (int i = 0; i < count; ++i) {
        udp::endpoint peer;
        const std::size_t n =
            co_await socket.async_receive_from(asio::buffer(data), peer, asio::use_awaitable);
        co_await socket.async_send_to(asio::buffer(data, n), peer, asio::use_awaitable);
    }
}

int main(int argc, char* argv[]) {
    if (argc != 4) {
        std::cerr << "usage: datagram_ping_server ADDRESS PORT COUNT\n";
        return 2;
    }
    try {
        asio::io_context io;
        const udp::endpoint local(asio::ip::make_address(argv[1]),
                                  static_cast<unsigned short>(std::atoi(argv[2])));
        corio::datagram_socket socket(io);
        socket.open(corio::transport::automatic, local.protocol());
        socket.bind(local);
        std::cout << "serving on " << socket.local_endpoint() << " over "
                  << corio::to_string(socket.transport()) << std::endl;
        asio::co_spawn(io, serve(socket, std::atoi(argv[3])), [](std::exception_ptr e) {
            if (e)
                std::rethrow_exception(e);
        });
        io.run();
    } catch (const std::exception& e) {
        std::cerr << "datagram_ping_server: " << e.what() << '\n';
        return 1;
    }
}
