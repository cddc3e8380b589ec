// A peer in a process of its own, for tests of what a stream sees when its
// peer dies: it connects to the address given, says "ready", then waits to be
// killed.
//   stream_peer tcp|rsocket ADDRESS PORT
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <corio/stream.hpp>

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fputs("usage: stream_peer tcp|rsocket ADDRESS PORT\n", stderr);
        return 2;
    }
    const auto transport =
        std::string_view(argv[1]) == "rsocket" ? corio::transport::rsocket : corio::transport::tcp;
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
        [&](std::exception_ptr e) {
            if (e) {
                try {
                    std::rethrow_exception(e);
                } catch (const std::exception& error) {
                    std::fprintf(stderr, "stream_peer: %s\n", error.what());
                }
            }
        });
    context.run();
    if (status != 0)
        return status;
    for (;;)
        ::pause();
}
