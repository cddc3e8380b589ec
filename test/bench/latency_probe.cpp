// Measures two latencies of the rpoll service that correctness depends on,
// on the transport and poll mode given:
//   accept: from a client's connect starting to the server's async_accept
//           completing (rdma-core v44's rpoll can sleep through a new
//           connection for 5 s; corio re-checks listening rsockets on a tick);
//   close:  the longest stall of a ping-pong on one stream while another
//           stream, its send buffers full, is closed on the same io_context
//           (rclose and rshutdown can block even on nonblocking rsockets).
// Prints medians and maxima; exits non-zero only on errors.
//   latency_probe [tcp|rsocket] [thread|busy] [ADDRESS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <corio/acceptor.hpp>
#include <corio/rpoll_service.hpp>
#include <corio/stream.hpp>

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using clock_type = std::chrono::steady_clock;

namespace {

double ms(clock_type::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

void report(const char* what, std::vector<double> samples) {
    std::sort(samples.begin(), samples.end());
    std::printf("%-34s median %8.3f ms   max %8.3f ms   (n=%zu)\n", what,
                samples[samples.size() / 2], samples.back(), samples.size());
}

asio::awaitable<void> measure(corio::transport transport, asio::ip::address address) {
    auto executor = co_await asio::this_coro::executor;
    corio::acceptor acceptor(executor, {address, 0}, transport);
    const auto where = acceptor.local_endpoint();

    std::vector<double> setup_ms;
    std::vector<double> accept_ms;
    for (int i = 0; i < 15; ++i) {
        corio::stream client(executor, transport);
        const auto start = clock_type::now();
        clock_type::time_point connected{};
        clock_type::time_point accepted{};
        auto connect = [&]() -> asio::awaitable<void> {
            co_await client.async_connect(where, asio::use_awaitable);
            connected = clock_type::now();
        };
        auto accept = [&]() -> asio::awaitable<corio::stream> {
            auto s = co_await acceptor.async_accept(asio::use_awaitable);
            accepted = clock_type::now();
            co_return s;
        };
        auto server = co_await (accept() && connect());
        setup_ms.push_back(ms(std::max(accepted, connected) - start));
        // How long the accept lagged behind the connection being up: the
        // delay rdma-core v44's rpoll would stretch to 5 s.
        accept_ms.push_back(ms(accepted > connected ? accepted - connected : clock_type::duration{}));
    }
    report("connection set-up (both sides)", setup_ms);
    report("async_accept after connect done", accept_ms);

    // A ping-pong pair, and a victim pair whose sender is closed mid-stream.
    corio::stream ping(executor, transport);
    auto pong = co_await (acceptor.async_accept(asio::use_awaitable) &&
                          ping.async_connect(where, asio::use_awaitable));
    std::vector<double> stall_ms;
    for (int round = 0; round < 5; ++round) {
        corio::stream victim(executor, transport);
        auto victim_peer = co_await (acceptor.async_accept(asio::use_awaitable) &&
                                     victim.async_connect(where, asio::use_awaitable));
        std::vector<char> block(256 * 1024, 'v');
        // Fill the victim's send buffers: its peer never reads.
        for (;;) {
            asio::steady_timer t(executor, std::chrono::milliseconds(20));
            auto r = co_await (victim.async_write_some(asio::buffer(block), asio::use_awaitable) ||
                               t.async_wait(asio::use_awaitable));
            if (r.index() == 1)
                break;
        }
        bool closed = false;
        asio::steady_timer close_timer(executor, std::chrono::milliseconds(5));
        close_timer.async_wait([&](auto) {
            victim.close();
            closed = true;
        });
        double worst = 0;
        char byte = 'p';
        while (!closed) {
            const auto start = clock_type::now();
            co_await asio::async_write(ping, asio::buffer(&byte, 1), asio::use_awaitable);
            co_await asio::async_read(pong, asio::buffer(&byte, 1), asio::use_awaitable);
            co_await asio::async_write(pong, asio::buffer(&byte, 1), asio::use_awaitable);
            co_await asio::async_read(ping, asio::buffer(&byte, 1), asio::use_awaitable);
            worst = std::max(worst, ms(clock_type::now() - start));
        }
        stall_ms.push_back(worst);
    }
    report("ping-pong round trip across close", stall_ms);
}

} // namespace

int main(int argc, char** argv) {
    const std::string_view transport_name = argc > 1 ? argv[1] : "tcp";
    const std::string_view mode_name = argc > 2 ? argv[2] : "thread";
    const char* address = argc > 3 ? argv[3] : std::getenv("CORIO_RDMA_ADDR");
    const auto transport =
        transport_name == "rsocket" ? corio::transport::rsocket : corio::transport::tcp;
    if (address == nullptr || transport == corio::transport::tcp)
        address = "127.0.0.1";
    asio::io_context context;
    corio::set_poll_mode(context, mode_name == "busy" ? corio::poll_mode::busy
                                                      : corio::poll_mode::thread);
    std::printf("latency_probe: %s transport, %s poll mode, %s\n",
                std::string(transport_name).c_str(), std::string(mode_name).c_str(), address);
    int status = 0;
    asio::co_spawn(context, measure(transport, asio::ip::make_address(address)),
                   [&](std::exception_ptr e) {
                       if (!e)
                           return;
                       try {
                           std::rethrow_exception(e);
                       } catch (const std::exception& error) {
                           std::fprintf(stderr, "latency_probe: %s\n", error.what());
                           status = 1;
                       }
                   });
    context.run();
    return status;
}
