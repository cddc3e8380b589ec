// tutorial_transport [ADDRESS]: step 4 of doc/tutorial.md. What corio::transport::automatic
// picks on this host, a connection on each transport this host has, the RDMA options set
// before connecting and read back after, and the errors for an option at the wrong time or on
// the wrong transport.
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <corio/acceptor.hpp>
#include <corio/error.hpp>
#include <corio/rdma_available.hpp>
#include <corio/socket_base.hpp>
#include <corio/stream.hpp>
#include <corio/transport.hpp>

namespace asio = boost::asio;
using asio::use_awaitable;
using namespace asio::experimental::awaitable_operators;
using option = corio::socket_base;

void expect(const std::string& what, boost::system::error_code ec,
            boost::system::error_code wanted) {
    if (ec != wanted)
        throw std::runtime_error(what + ": expected " + wanted.message() + ", got " + ec.message());
}

asio::awaitable<void> connect_over(corio::transport t, asio::ip::address address) {
    const auto ex = co_await asio::this_coro::executor;
    const asio::ip::tcp::endpoint local(address, 0);
    // Options that size the connection are set between open() and connect (on the acceptor,
    // before listen, and its accepted streams inherit them); the one-step constructors of
    // the acceptor and async_connect alone leave no room for that.
    corio::acceptor acceptor(ex);
    corio::stream client(ex);
    acceptor.open(t, local.protocol());
    client.open(t, local.protocol());
    // The common options work on both transports.
    client.set_option(option::no_delay(true));
    client.set_option(option::send_buffer_size(256 * 1024));
    boost::system::error_code ec;
    client.set_option(option::sq_size(64), ec);
    if (t == corio::transport::rsocket) {
        expect("sq_size before connect", ec, {});
        client.set_option(option::rq_size(64));
        client.set_option(option::inline_size(128));
        acceptor.set_option(option::inline_size(128));
    } else {
        // Kernel TCP has no queue pair to size.
        expect("sq_size on tcp", ec, corio::error::not_supported_by_transport);
        std::cout << "tcp: sq_size is not_supported_by_transport (" << ec.message() << ")\n";
    }
    acceptor.bind(local);
    acceptor.listen();
    auto server = co_await (acceptor.async_accept(use_awaitable) &&
                            client.async_connect(acceptor.local_endpoint(), use_awaitable));
    std::cout << "connected over " << corio::to_string(client.transport()) << " and "
              << corio::to_string(server.transport()) << '\n';
    if (t == corio::transport::rsocket) {
        // The device may grant other sizes than asked; a query after connect says which.
        option::sq_size sq;
        option::inline_size inline_bytes;
        client.get_option(sq);
        client.get_option(inline_bytes);
        std::cout << "rsocket: asked sq_size 64, inline_size 128; granted " << sq.value() << ", "
                  << inline_bytes.value() << '\n';
        client.set_option(option::sq_size(128), ec);
        expect("sq_size after connect", ec, corio::error::option_after_connect);
        std::cout << "rsocket: sq_size after connect is option_after_connect\n";
    }
}

int main(int argc, char** argv) try {
    const auto address = asio::ip::make_address(argc > 1 ? argv[1] : "127.0.0.1");
    const corio::transport here = corio::resolve_transport(corio::transport::automatic);
    std::cout << "rdma_available() is " << std::boolalpha << corio::rdma_available()
              << ": automatic means " << corio::to_string(here) << " here\n";
    std::vector<corio::transport> transports{corio::transport::tcp};
    if (corio::rdma_available()) {
        transports.push_back(corio::transport::rsocket);
    } else {
        // Asking for rsockets explicitly on a host without a device is an error, which
        // corio::condition::no_rdma_device matches; automatic would have chosen tcp.
        asio::io_context io;
        corio::stream stream(io);
        boost::system::error_code ec;
        stream.open(corio::transport::rsocket, asio::ip::tcp::v4(), ec);
        if (ec != corio::condition::no_rdma_device)
            throw std::runtime_error("rsocket without a device: got " + ec.message());
        std::cout << "rsocket without a device: " << ec.message() << '\n';
    }
    for (const auto t : transports) {
        asio::io_context io;
        auto done = asio::co_spawn(io, connect_over(t, address), asio::use_future);
        io.run();
        done.get();
    }
} catch (const std::exception& e) {
    std::cerr << "tutorial_transport: " << e.what() << '\n';
    return 1;
}
