// A process that returns from main while background closes are queued or
// running: its rsocket streams are closed just before, each rclose and
// rshutdown slowed (test/support's slow_rsocket_calls, preloaded) past the
// closer's exit grace, so some are still in a call and others still queued
// when exit runs. background_closer_exit_rdma_test.sh runs it many times:
// it must exit 0 every time, never crash in exit.

#include <chrono>
#include <cstdio>
#include <exception>
#include <utility>
#include <vector>

#include <dlfcn.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <corio/stream.hpp>

#include "transport_under_test.hpp"

namespace asio = boost::asio;

int main() {
    asio::io_context context;
    bool done = false;
    asio::co_spawn(
        context,
        [&]() -> asio::awaitable<void> {
            std::vector<std::pair<corio::stream, corio::stream>> pairs;
            for (int i = 0; i < 4; ++i)
                pairs.push_back(co_await corio::test::make_stream_pair());
            // Data in flight as they close: the last sends must not be what
            // crashes or hangs the exit.
            const std::vector<unsigned char> block(16384, 0x3c);
            for (auto& [client, server] : pairs)
                co_await asio::async_write(client, asio::buffer(block), asio::use_awaitable);
            // Set up at full speed; from here on every close is slowed.
            using begin_slowing = void (*)();
            if (auto begin = reinterpret_cast<begin_slowing>(
                    ::dlsym(RTLD_DEFAULT, "corio_slow_rsocket_calls_begin")))
                begin();
            for (auto& [client, server] : pairs) {
                client.close();
                server.close();
            }
            done = true;
        },
        [](std::exception_ptr e) {
            if (!e)
                return;
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                std::fprintf(stderr, "background_closer_exit_child: %s\n", x.what());
            }
            std::_Exit(2);
        });
    context.run_for(std::chrono::seconds(30));
    if (!done) {
        std::fputs("background_closer_exit_child: the streams were not set up in 30 s\n", stderr);
        return 3;
    }
    return 0;
}
