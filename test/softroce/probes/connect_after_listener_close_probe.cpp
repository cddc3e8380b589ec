// Closes a listening rsocket acceptor and connects to its port at once,
// ROUNDS times, each connect bounded by 20 s; then the same with a port
// that was bound but never listened on. On rdma-core v44 the listener's
// rclose runs in corio's background closer, and until it has, librdmacm's
// listen service still takes connections on the port: some connects made
// right after close() returned succeed (doc/architecture.md, "Closing a
// listener"). Run in the guest:
//   test/softroce/guest-run -- build/test/softroce/probes/connect_after_listener_close_probe 30
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <corio/acceptor.hpp>
#include <corio/stream.hpp>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

asio::awaitable<void> rounds(asio::ip::address address, int count, bool listen) {
    using namespace asio::experimental::awaitable_operators;
    auto executor = co_await asio::this_coro::executor;
    int refused = 0, connected = 0, other = 0, pending = 0;
    for (int i = 0; i < count; ++i) {
        asio::ip::tcp::endpoint port;
        {
            corio::acceptor probe(executor);
            probe.open(corio::transport::rsocket, asio::ip::tcp::v4());
            probe.bind({address, 0});
            if (listen)
                probe.listen();
            port = probe.local_endpoint();
        }
        corio::stream client(executor, corio::transport::rsocket);
        asio::steady_timer guard(executor, 20s);
        auto outcome = co_await (client.async_connect(port, asio::as_tuple(asio::use_awaitable)) ||
                                 guard.async_wait(asio::as_tuple(asio::use_awaitable)));
        if (outcome.index() == 1) {
            ++pending;
            continue;
        }
        const auto [ec] = std::get<0>(outcome);
        if (ec == asio::error::connection_refused)
            ++refused;
        else if (!ec)
            ++connected;
        else
            ++other;
    }
    std::printf("%s: %d connects: %d refused, %d connected, %d other errors, %d pending after 20 s\n",
                listen ? "listened, then closed" : "bound, never listened", count, refused,
                connected, other, pending);
}

} // namespace

int main(int argc, char** argv) {
    const char* address = std::getenv("CORIO_RDMA_ADDR");
    if (address == nullptr) {
        std::fprintf(stderr, "CORIO_RDMA_ADDR is not set: run this in the guest\n");
        return 77;
    }
    const int count = argc > 1 ? std::atoi(argv[1]) : 30;
    asio::io_context io;
    const auto ip = asio::ip::make_address(address);
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
        co_await rounds(ip, count, true);
        co_await rounds(ip, count, false);
    }, asio::detached);
    io.run();
    return 0;
}
