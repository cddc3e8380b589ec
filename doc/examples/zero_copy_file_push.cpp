// zero_copy_file_push INPUT OUTPUT [ADDRESS]: both ends of a corio zero-copy channel,
// over ADDRESS (127.0.0.1; on an RDMA host, the device's). Each chunk of INPUT is written
// straight into a slot of the receiver's mapped memory, and to OUTPUT from there.
#include <cstdio>
#include <fstream>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <corio/acceptor.hpp>
#include <corio/socket_base.hpp>
#include <corio/stream.hpp>
#include <corio/zero_copy_channel.hpp>

namespace asio = boost::asio;
using asio::use_awaitable;
using namespace asio::experimental::awaitable_operators;

asio::awaitable<void> push(corio::stream stream, std::ifstream& in) {
    corio::zero_copy_sender tx(std::move(stream));
    co_await tx.async_handshake(use_awaitable);
    std::vector<char> chunk(tx.slot_size());
    while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0)
        co_await tx.async_send(asio::buffer(chunk.data(), static_cast<std::size_t>(in.gcount())),
                               use_awaitable);
    co_await tx.async_send(asio::const_buffer(), use_awaitable); // empty: end of file
    co_await tx.async_shutdown(use_awaitable); // completes once the receiver has closed
}

asio::awaitable<void> pull(corio::stream stream, std::ofstream& out) {
    corio::zero_copy_receiver rx(std::move(stream), {.slot_count = 8, .slot_size = 64 * 1024});
    co_await rx.async_handshake(use_awaitable);
    // Replacing (or destroying) a message gives its slot back to the sender.
    for (auto m = co_await rx.async_receive(use_awaitable); m.size() > 0;
         m = co_await rx.async_receive(use_awaitable))
        out.write(reinterpret_cast<const char*>(m.data()), static_cast<std::streamsize>(m.size()));
}

asio::awaitable<void> run(asio::ip::tcp::endpoint local, std::ifstream& in, std::ofstream& out) {
    corio::acceptor acceptor(co_await asio::this_coro::executor);
    corio::stream client(acceptor.get_executor());
    acceptor.open(corio::transport::automatic, local.protocol());
    client.open(corio::transport::automatic, local.protocol());
    acceptor.set_option(corio::socket_base::iomap_size(1)); // both ends, before connecting
    client.set_option(corio::socket_base::iomap_size(1));
    acceptor.bind(local);
    acceptor.listen();
    auto server = co_await (acceptor.async_accept(use_awaitable) &&
                            client.async_connect(acceptor.local_endpoint(), use_awaitable));
    co_await (push(std::move(client), in) && pull(std::move(server), out));
}

int main(int argc, char** argv) try {
    if (argc != 3 && argc != 4) {
        std::fputs("usage: zero_copy_file_push INPUT OUTPUT [ADDRESS]\n", stderr);
        return 2;
    }
    std::ifstream in(argv[1], std::ios::binary);
    std::ofstream out(argv[2], std::ios::binary | std::ios::trunc);
    if (!in || !out) {
        std::fprintf(stderr, "zero_copy_file_push: cannot open %s\n", !in ? argv[1] : argv[2]);
        return 1;
    }
    const asio::ip::tcp::endpoint local(asio::ip::make_address(argc == 4 ? argv[3] : "127.0.0.1"),
                                        0);
    asio::io_context context;
    auto done = asio::co_spawn(context, run(local, in, out), asio::use_future);
    context.run();
    done.get(); // rethrows what the coroutines threw
    return out.flush() ? 0 : 1;
} catch (const std::exception& e) {
    std::fprintf(stderr, "zero_copy_file_push: %s\n", e.what());
    return 1;
}
