#define BOOST_TEST_MODULE rsocket_ops_room_rdma
#include <boost/test/unit_test.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <memory>
#include <tuple>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <corio/acceptor.hpp>
#include <corio/config.hpp>
#include <corio/error.hpp>
#include <corio/stream.hpp>

#include "coroutine_test.hpp"
#include "transport_under_test.hpp"

// The room corio makes in librdmacm's connection and listen services
// (doc/architecture.md): beyond CORIO_RSOCKET_CM_CAPACITY watched rsockets,
// connect and accept end with corio::error::rsocket_service_full, and beyond
// CORIO_RSOCKET_LISTEN_CAPACITY listening rsockets, listen ends with
// corio::error::rsocket_listen_service_full, not a hang or a crash, and the
// sockets already open keep working. Runs on rsockets
// (test/meson.build sets CORIO_TEST_TRANSPORT=rsocket), in the guest.

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;

namespace {

/// Both ends of every stream live in this process, so each stream takes two
/// places: two streams fill four, a third client the fifth.
constexpr int capacity = 5;
/// Listening rsockets the listen service is primed for: twice the 4 entries
/// its array starts with.
constexpr int listen_capacity = 8;

/// Set before the process's first rsocket, which is when corio reads them;
/// then the transport check.
struct small_room {
    small_room() {
        if (!CORIO_RDMACM_CM_SERVICE_GROWS_UNSAFELY) {
            std::puts("SKIP: this librdmacm's connection service grows safely; corio sets no limit");
            std::exit(77);
        }
        ::setenv("CORIO_RSOCKET_CM_CAPACITY", std::to_string(capacity).c_str(), 1);
        ::setenv("CORIO_RSOCKET_LISTEN_CAPACITY", std::to_string(listen_capacity).c_str(), 1);
        // Only now: the check opens an rsocket. (A second global fixture
        // would not do: Boost.Test orders them by address, not as declared.)
        corio::test::transport_available check;
    }
};

/// Sends a few bytes each way and checks they arrive unchanged.
asio::awaitable<void> check_echo(corio::stream& a, corio::stream& b, unsigned char seed) {
    std::array<unsigned char, 512> out;
    std::array<unsigned char, 512> in;
    for (std::size_t i = 0; i < out.size(); ++i)
        out[i] = static_cast<unsigned char>(seed + i * 7);
    co_await asio::async_write(a, asio::buffer(out), asio::use_awaitable);
    co_await asio::async_read(b, asio::buffer(in), asio::use_awaitable);
    BOOST_TEST((in == out));
    co_await asio::async_write(b, asio::buffer(in), asio::use_awaitable);
    in.fill(0);
    co_await asio::async_read(a, asio::buffer(in), asio::use_awaitable);
    BOOST_TEST((in == out));
}

} // namespace

BOOST_TEST_GLOBAL_FIXTURE(small_room);

CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(connect_and_accept_beyond_the_room_fail_with_service_full,
                                        120s) {
    BOOST_TEST_REQUIRE((corio::test::transport_under_test() == corio::transport::rsocket),
                       "set CORIO_TEST_TRANSPORT=rsocket");
    auto executor = co_await asio::this_coro::executor;
    corio::acceptor acceptor(executor, corio::test::any_port_endpoint(), corio::transport::rsocket);
    const auto where = acceptor.local_endpoint();

    // Two streams: four watched rsockets.
    corio::stream client1(executor, corio::transport::rsocket);
    co_await client1.async_connect(where, asio::use_awaitable);
    auto server1 = co_await acceptor.async_accept(asio::use_awaitable);
    corio::stream client2(executor, corio::transport::rsocket);
    co_await client2.async_connect(where, asio::use_awaitable);
    auto server2 = co_await acceptor.async_accept(asio::use_awaitable);

    // The fifth: rsocket's listen thread completes the connection without
    // raccept, so the connect succeeds and the accept is the one refused.
    corio::stream client3(executor, corio::transport::rsocket);
    co_await client3.async_connect(where, asio::use_awaitable);
    auto [accept_ec, refused] = co_await acceptor.async_accept(asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((accept_ec == corio::error::rsocket_service_full), accept_ec.message());
    BOOST_TEST(!refused.is_open());

    corio::stream client4(executor, corio::transport::rsocket);
    auto [connect_ec] = co_await client4.async_connect(where, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((connect_ec == corio::error::rsocket_service_full), connect_ec.message());

    // The streams inside the room are untouched.
    co_await check_echo(client1, server1, 1);
    co_await check_echo(client2, server2, 2);

    // Closing a stream gives its room back once rclose has returned, which
    // may happen off this thread: accept again until the queued connection
    // from client3 comes out.
    client1.close();
    server1.close();
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    error_code ec;
    corio::stream server3(executor);
    do {
        asio::steady_timer pause(executor, 10ms);
        co_await pause.async_wait(asio::use_awaitable);
        std::tie(ec) = co_await acceptor.async_accept(server3, asio::as_tuple(asio::use_awaitable));
    } while (ec == corio::error::rsocket_service_full && std::chrono::steady_clock::now() < deadline);
    BOOST_TEST_REQUIRE(!ec, ec.message());
    co_await check_echo(client3, server3, 3);
    co_await check_echo(client2, server2, 4);
}

CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(listening_beyond_the_listen_room_fails_with_its_error,
                                        120s) {
    BOOST_TEST_REQUIRE((corio::test::transport_under_test() == corio::transport::rsocket),
                       "set CORIO_TEST_TRANSPORT=rsocket");
    auto executor = co_await asio::this_coro::executor;
    std::vector<std::unique_ptr<corio::acceptor>> listening;
    for (int i = 0; i < listen_capacity; ++i)
        listening.push_back(std::make_unique<corio::acceptor>(
            executor, corio::test::any_port_endpoint(), corio::transport::rsocket));

    corio::acceptor refused(executor);
    refused.open(corio::transport::rsocket, corio::test::any_port_endpoint().protocol());
    refused.bind(corio::test::any_port_endpoint());
    error_code ec;
    refused.listen(asio::socket_base::max_listen_connections, ec);
    BOOST_TEST((ec == corio::error::rsocket_listen_service_full), ec.message());

    // Every listener inside the room accepts; the last one is checked with
    // an echo.
    const auto where = listening.back()->local_endpoint();
    corio::stream client(executor, corio::transport::rsocket);
    co_await client.async_connect(where, asio::use_awaitable);
    auto server = co_await listening.back()->async_accept(asio::use_awaitable);
    co_await check_echo(client, server, 5);

    // A closed listener's room comes back once its background rclose has
    // returned: the next listen waits for that instead of failing.
    listening.front()->close();
    corio::acceptor again(executor);
    again.open(corio::transport::rsocket, corio::test::any_port_endpoint().protocol());
    again.bind(corio::test::any_port_endpoint());
    again.listen(asio::socket_base::max_listen_connections, ec);
    BOOST_TEST_REQUIRE(!ec, ec.message());
    corio::stream client2(executor, corio::transport::rsocket);
    co_await client2.async_connect(again.local_endpoint(), asio::use_awaitable);
    auto server2 = co_await again.async_accept(asio::use_awaitable);
    co_await check_echo(client2, server2, 6);
}
