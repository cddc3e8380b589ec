// A peer in a process of its own, for tests of what a stream sees when its
// peer dies: it connects to the address given, says "ready", then waits to be
// killed. With "listen" it is the listening end instead: it listens on
// ADDRESS (a port the system picks), prints "listening PORT" on stdout,
// accepts one connection, says "ready" on it, then waits to be killed.
//   stream_peer tcp|rsocket ADDRESS PORT
//   stream_peer listen tcp|rsocket ADDRESS
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>

#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <corio/acceptor.hpp>
#include <corio/stream.hpp>

namespace {

void report_failure(std::exception_ptr e) {
    if (!e)
        return;
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "stream_peer: %s\n", error.what());
    }
}

/// Runs the peer's one coroutine; once it said "ready", waits to be killed.
int run_then_wait(boost::asio::io_context& context, const int& status) {
    context.run();
    if (status != 0)
        return status;
    for (;;)
        ::pause();
}

corio::transport transport_named(std::string_view name) {
    return name == "rsocket" ? corio::transport::rsocket : corio::transport::tcp;
}

int listen_then_wait(corio::transport transport, const char* address) {
    boost::asio::io_context context;
    corio::acceptor acceptor(context, {boost::asio::ip::make_address(address), 0}, transport);
    std::printf("listening %u\n", static_cast<unsigned>(acceptor.local_endpoint().port()));
    std::fflush(stdout);
    int status = 1;
    // The accepted stream stays open until the process is killed.
    std::optional<corio::stream> accepted;
    boost::asio::co_spawn(
        context,
        [&]() -> boost::asio::awaitable<void> {
            accepted.emplace(co_await acceptor.async_accept(boost::asio::use_awaitable));
            co_await boost::asio::async_write(*accepted, boost::asio::buffer("ready", 5),
                                              boost::asio::use_awaitable);
            status = 0;
        },
        report_failure);
    return run_then_wait(context, status);
}

} // namespace

int main(int argc, char** argv) {
    if (argc == 4 && std::string_view(argv[1]) == "listen")
        return listen_then_wait(transport_named(argv[2]), argv[3]);
    if (argc != 4) {
        std::fputs("usage: stream_peer tcp|rsocket ADDRESS PORT\n"
                   "       stream_peer listen tcp|rsocket ADDRESS\n",
                   stderr);
        return 2;
    }
    const auto transport = transport_named(argv[1]);
    const boost::asio::ip::tcp::endpoint peer(boost::asio::ip::make_address(argv[2]),
                                              static_cast<unsigned short>(std::atoi(argv[3])));
    boost::asio::io_context context;
    corio::stream stream(context, transport);
    int status = 1;
    boost::asio::co_spawn(
        context,
        [&]() -> boost::asio::awaitable<void> {
            co_await stream.async_connect(peer, boost::asio::use_awaitable);
            co_await boost::asio::async_write(stream, boost::asio::buffer("ready", 5),
                                              boost::asio::use_awaitable);
            status = 0;
        },
        report_failure);
    return run_then_wait(context, status);
}
