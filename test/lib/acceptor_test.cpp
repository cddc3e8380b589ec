#define BOOST_TEST_MODULE acceptor
#include <boost/test/unit_test.hpp>

#include <array>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <corio/acceptor.hpp>
#include <corio/stream.hpp>

#include "background_jobs.hpp"
#include "coroutine_test.hpp"
#include "primed_rsocket_services.hpp"
#include "transport_under_test.hpp"

// Servers with many listening sockets at once: on rsockets each listener is
// watched by librdmacm's listen service, whose v44 array grows under its
// running thread (doc/architecture.md, "The rsocket seam"); eight listeners
// segfaulted a process before corio made room for them.

CORIO_TEST_PRIMED_TRANSPORT_FIXTURE();

namespace asio = boost::asio;
using namespace std::chrono_literals;
using namespace asio::experimental::awaitable_operators;
using boost::system::error_code;

namespace {

/// Listeners open at once: the bound, and 16 times the 4 entries
/// librdmacm's array starts with.
constexpr int listeners = 64;
constexpr int rounds = 3;

/// Accepts one connection on `acceptor` and sends it `tag`.
asio::awaitable<void> serve_one(corio::acceptor& acceptor, unsigned char tag) {
    auto server = co_await acceptor.async_accept(asio::use_awaitable);
    co_await asio::async_write(server, asio::buffer(&tag, 1), asio::use_awaitable);
    // Waits for the client's end of stream, so the byte is read before the
    // server side closes.
    unsigned char ignored = 0;
    auto [ec, n] = co_await server.async_read_some(asio::buffer(&ignored, 1),
                                                   asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((ec == asio::error::eof), "server " << int(tag) << ": " << ec.message());
}

/// Connects to `acceptor` and checks that it says `tag`.
asio::awaitable<void> call_one(const asio::ip::tcp::endpoint& where, unsigned char tag) {
    corio::stream client(co_await asio::this_coro::executor, corio::test::transport_under_test());
    co_await client.async_connect(where, asio::use_awaitable);
    unsigned char got = 0;
    co_await asio::async_read(client, asio::buffer(&got, 1), asio::use_awaitable);
    BOOST_TEST(int(got) == int(tag));
    client.shutdown(corio::stream::shutdown_send);
    // The server's read sees eof; then both ends go.
    unsigned char ignored = 0;
    auto [ec, n] = co_await client.async_read_some(asio::buffer(&ignored, 1),
                                                   asio::as_tuple(asio::use_awaitable));
    (void)ec;
    (void)n;
}

int open_descriptors() {
    int n = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd"))
        ++n;
    return n - 1; // the iterator's own
}

/// What the open descriptors refer to, for a failure's message.
std::string descriptor_targets() {
    std::string out;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
        const auto target = std::filesystem::read_symlink(entry.path(), ec);
        if (!ec)
            out += " " + entry.path().filename().string() + "->" + target.string();
    }
    return out;
}

asio::awaitable<void> sleep_for(std::chrono::milliseconds d) {
    asio::steady_timer timer(co_await asio::this_coro::executor, d);
    co_await timer.async_wait(asio::use_awaitable);
}

} // namespace

// A listener closed with connections that arrived but were never accepted
// ends them (their peers see the stream end) and keeps nothing of them. On
// rsockets v44's listen service has already accepted each such connection
// into an rsocket of its own, which its rclose does not free (corio takes
// and closes them first: rsocket_ops.cpp, close_queued_connections).
CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(closing_a_listener_ends_connections_never_accepted, 90s) {
    constexpr int queued = 3;
    auto executor = co_await asio::this_coro::executor;
    // Warm-up: the first rsocket of a process starts librdmacm's service
    // threads and corio's priming, which keep descriptors of their own.
    {
        corio::acceptor warm(executor, corio::test::any_port_endpoint(),
                             corio::test::transport_under_test());
        corio::stream client(executor, corio::test::transport_under_test());
        auto server = co_await (warm.async_accept(asio::use_awaitable) &&
                                client.async_connect(warm.local_endpoint(), asio::use_awaitable));
        // A read that waits, as the clients' below do: the service's own
        // descriptors (wake, tick, epoll) come with the first wait.
        unsigned char byte = 0;
        asio::co_spawn(executor, [&server]() -> asio::awaitable<void> {
            asio::steady_timer t(co_await asio::this_coro::executor, 50ms);
            co_await t.async_wait(asio::use_awaitable);
            server.close();
        }, asio::detached);
        auto [ec, n] = co_await client.async_read_some(asio::buffer(&byte, 1),
                                                       asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec.failed(), "the warm-up read got " << n << " bytes");
    }
    const bool warm_up_closed = co_await corio::test::await_background_jobs(10s);
    BOOST_TEST_REQUIRE(warm_up_closed, "the warm-up's closes ended");
    const int before = open_descriptors();

    std::vector<corio::stream> clients;
    {
        corio::acceptor listener(executor, corio::test::any_port_endpoint(),
                                 corio::test::transport_under_test());
        for (int i = 0; i < queued; ++i) {
            clients.emplace_back(executor, corio::test::transport_under_test());
            co_await clients.back().async_connect(listener.local_endpoint(), asio::use_awaitable);
        }
        // Closed with `queued` connections made and none accepted.
        BOOST_TEST_MESSAGE("descriptors: " << before << " before, " << open_descriptors()
                                           << " with the listener and its clients");
    }
    for (auto& client : clients) {
        unsigned char byte = 0;
        auto result = co_await (client.async_read_some(asio::buffer(&byte, 1),
                                                       asio::as_tuple(asio::use_awaitable)) ||
                                sleep_for(20s));
        BOOST_TEST_REQUIRE(result.index() == 0u,
                           "a client of the closed listener still connected after 20 s");
        const auto [read_ec, read_n] = std::get<0>(result);
        BOOST_TEST(read_ec.failed(), "read " << read_n << " bytes from a listener never accepted");
        BOOST_TEST_MESSAGE("a client's read: " << read_ec.message());
    }
    clients.clear();
    const bool closes_ended = co_await corio::test::await_background_jobs(10s);
    BOOST_TEST(closes_ended, "the clients' closes ended");
    BOOST_TEST(open_descriptors() == before,
               open_descriptors() - before << " descriptors more than before the listener:"
                                           << descriptor_targets());
}

CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(many_listeners_at_once_each_accept_in_rounds, 240s) {
    auto executor = co_await asio::this_coro::executor;
    for (int round = 0; round < rounds; ++round) {
        std::vector<std::unique_ptr<corio::acceptor>> acceptors;
        for (int i = 0; i < listeners; ++i)
            acceptors.push_back(std::make_unique<corio::acceptor>(
                executor, corio::test::any_port_endpoint(), corio::test::transport_under_test()));
        // Every listener serves one client, all at once.
        std::vector<asio::awaitable<void>> work;
        int finished = 0;
        for (int i = 0; i < listeners; ++i) {
            const auto tag = static_cast<unsigned char>(round * listeners + i);
            const auto where = acceptors[i]->local_endpoint();
            asio::co_spawn(executor, serve_one(*acceptors[i], tag) && call_one(where, tag),
                           [&finished](std::exception_ptr e) {
                               if (e)
                                   std::rethrow_exception(e);
                               ++finished;
                           });
        }
        asio::steady_timer timer(executor);
        const auto deadline = std::chrono::steady_clock::now() + 200s;
        while (finished < listeners && std::chrono::steady_clock::now() < deadline) {
            timer.expires_after(5ms);
            co_await timer.async_wait(asio::use_awaitable);
        }
        BOOST_TEST_REQUIRE(finished == listeners, "round " << round << ": " << finished << " of "
                                                            << listeners << " connections done");
        for (auto& a : acceptors)
            a->close();
    }
}
