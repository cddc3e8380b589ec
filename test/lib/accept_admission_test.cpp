#define BOOST_TEST_MODULE accept_admission
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>
#include <variant>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <corio/acceptor.hpp>
#include <corio/network_allow_list.hpp>
#include <corio/stream.hpp>

#include "coroutine_test.hpp"
#include "primed_rsocket_services.hpp"
#include "transport_under_test.hpp"

// What an acceptor's filter and open-stream limit (detail/accept_admission)
// do to peers and to the application, on the transport under test.

CORIO_TEST_PRIMED_TRANSPORT_FIXTURE();

namespace asio = boost::asio;
using namespace std::chrono_literals;
using namespace asio::experimental::awaitable_operators;
using boost::system::error_code;

namespace {

/// Waits, bounded by `limit`, until `done` holds; true if it does.
asio::awaitable<bool> eventually(const std::function<bool()>& done,
                                 std::chrono::milliseconds limit = 5000ms) {
    asio::steady_timer timer(co_await asio::this_coro::executor);
    for (auto waited = 0ms; !done(); waited += 10ms) {
        if (waited >= limit)
            co_return false;
        timer.expires_after(10ms);
        co_await timer.async_wait(asio::use_awaitable);
    }
    co_return true;
}

/// The longest one step of a connection (a connect, an accept, a first
/// read) may take here. A test's own deadline bounds it too, but a step that
/// runs out says which step it was. The first connect of the process waits
/// for the priming of librdmacm's connection service (doc/architecture.md,
/// 8 thread starts for the room set above), so it gets longer.
constexpr auto step_limit = 10s;
constexpr auto first_step_limit = 25s;

/// Runs `step`, bounded by `limit`: its result, or nothing once the limit
/// passed (the step is then cancelled, as the `||` operator does).
template <class T>
asio::awaitable<std::optional<T>> within(asio::awaitable<T> step,
                                         std::chrono::steady_clock::duration limit) {
    asio::steady_timer timer(co_await asio::this_coro::executor, limit);
    auto result = co_await (std::move(step) || timer.async_wait(asio::use_awaitable));
    if (result.index() != 0)
        co_return std::nullopt;
    co_return std::move(std::get<0>(result));
}

/// As above for a step with no result: true if it finished in time.
asio::awaitable<bool> within(asio::awaitable<void> step,
                             std::chrono::steady_clock::duration limit) {
    asio::steady_timer timer(co_await asio::this_coro::executor, limit);
    const auto result = co_await (std::move(step) || timer.async_wait(asio::use_awaitable));
    co_return result.index() == 0;
}

/// Connects to `where` as a refused peer would and says how its connection
/// ended: the connect's error, or else the first read's (end of stream or
/// a reset), or timed_out when either step outlasted `limit`. Success
/// would mean the server talked to it.
asio::awaitable<error_code> how_refused(const asio::ip::tcp::endpoint& where,
                                        std::chrono::steady_clock::duration limit = step_limit) {
    corio::stream client(co_await asio::this_coro::executor, corio::test::transport_under_test());
    const auto connected =
        co_await within(client.async_connect(where, asio::as_tuple(asio::use_awaitable)), limit);
    if (!connected)
        co_return asio::error::timed_out;
    if (const auto [connect_ec] = *connected; connect_ec)
        co_return connect_ec;
    unsigned char byte = 0;
    const auto read = co_await within(
        client.async_read_some(asio::buffer(&byte, 1), asio::as_tuple(asio::use_awaitable)),
        step_limit);
    if (!read)
        co_return asio::error::timed_out;
    const auto [ec, n] = *read;
    BOOST_TEST(n == 0u);
    co_return ec;
}

bool is_refusal(const error_code& ec) {
    return ec == asio::error::eof || ec == asio::error::connection_reset ||
           ec == asio::error::connection_refused || ec == asio::error::connection_aborted;
}

/// An accept left pending, to show that refused peers never complete it.
struct pending_accept {
    bool done = false;
    error_code ec;
    std::optional<corio::stream> stream;

    explicit pending_accept(corio::acceptor& acceptor) {
        acceptor.async_accept([this](error_code e, corio::stream s) {
            done = true;
            ec = e;
            stream.emplace(std::move(s));
        });
    }
};

/// Connects a client and accepts it, both at once (an rsocket connect
/// completes only when raccept runs), within step_limit.
asio::awaitable<std::pair<corio::stream, corio::stream>> admitted(corio::acceptor& acceptor) {
    corio::stream client(co_await asio::this_coro::executor, corio::test::transport_under_test());
    auto server =
        co_await within(acceptor.async_accept(asio::use_awaitable) &&
                            client.async_connect(acceptor.local_endpoint(), asio::use_awaitable),
                        step_limit);
    if (!server)
        throw std::runtime_error("an admitted peer's connect and accept took over 10 s");
    co_return std::pair(std::move(client), std::move(*server));
}

} // namespace

// The case deadlines add up to 155 s, inside the 170 s the guest gets.
CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(a_filtered_peer_is_closed_and_never_reaches_the_handler,
                                        60s) {
    auto executor = co_await asio::this_coro::executor;
    corio::acceptor acceptor(executor, corio::test::any_port_endpoint(),
                             corio::test::transport_under_test());
    corio::network_allow_list elsewhere;
    elsewhere.add("192.0.2.0/24");
    elsewhere.add("2001:db8::/32");
    acceptor.set_accept_filter(elsewhere);

    pending_accept accept(acceptor);
    // The process's first connect: see first_step_limit.
    const auto ec = co_await how_refused(acceptor.local_endpoint(), first_step_limit);
    BOOST_TEST(is_refusal(ec), ec.message());
    BOOST_TEST(co_await eventually([&] { return acceptor.refused_connections() == 1; }));
    BOOST_TEST(!accept.done);
    BOOST_TEST(acceptor.open_streams() == 0u);

    acceptor.cancel();
    BOOST_TEST(co_await eventually([&] { return accept.done; }));
    BOOST_TEST((accept.ec == asio::error::operation_aborted), accept.ec.message());

    // The same peer, allowed now, is served.
    std::optional<asio::ip::tcp::endpoint> seen;
    corio::network_allow_list here;
    here.add(corio::test::address_under_test().to_string());
    acceptor.set_accept_filter([&](const asio::ip::tcp::endpoint& peer) {
        seen = peer;
        return here(peer);
    });
    auto [client, server] = co_await admitted(acceptor);
    BOOST_TEST(server.is_open());
    BOOST_REQUIRE(seen.has_value());
    BOOST_TEST(seen->address() == corio::test::address_under_test());
    BOOST_TEST(seen->port() == client.local_endpoint().port());
    BOOST_TEST(acceptor.refused_connections() == 1u);
}

CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(a_throwing_filter_refuses, 20s) {
    auto executor = co_await asio::this_coro::executor;
    corio::acceptor acceptor(executor, corio::test::any_port_endpoint(),
                             corio::test::transport_under_test());
    acceptor.set_accept_filter(
        [](const asio::ip::tcp::endpoint&) -> bool { throw std::runtime_error("no"); });
    pending_accept accept(acceptor);
    const auto ec = co_await how_refused(acceptor.local_endpoint());
    BOOST_TEST(is_refusal(ec), ec.message());
    BOOST_TEST(co_await eventually([&] { return acceptor.refused_connections() == 1; }));
    BOOST_TEST(!accept.done);
    acceptor.close();
    BOOST_TEST(co_await eventually([&] { return accept.done; }));
}

CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(the_open_stream_limit_refuses_and_releases, 45s) {
    auto executor = co_await asio::this_coro::executor;
    corio::acceptor acceptor(executor, corio::test::any_port_endpoint(),
                             corio::test::transport_under_test());
    acceptor.set_max_open_streams(2);
    BOOST_TEST(acceptor.max_open_streams() == 2u);
    auto [client1, server1] = co_await admitted(acceptor);
    auto [client2, server2] = co_await admitted(acceptor);
    BOOST_TEST(acceptor.open_streams() == 2u);

    pending_accept accept(acceptor);
    for (int i = 0; i < 2; ++i) {
        const auto ec = co_await how_refused(acceptor.local_endpoint());
        BOOST_TEST(is_refusal(ec), ec.message());
    }
    BOOST_TEST(co_await eventually([&] { return acceptor.refused_connections() == 2; }));
    BOOST_TEST(!accept.done);

    // The admitted streams are untouched by the refusals.
    const unsigned char tag = 7;
    const auto written = co_await within(
        asio::async_write(server1, asio::buffer(&tag, 1), asio::use_awaitable), step_limit);
    BOOST_TEST(written.has_value());
    unsigned char got = 0;
    const auto read = co_await within(
        client1.async_read_some(asio::buffer(&got, 1), asio::use_awaitable), step_limit);
    BOOST_TEST(read.has_value());
    BOOST_TEST(int(got) == 7);

    // One closes: the next peer is accepted by the accept that waited.
    server1.close();
    BOOST_TEST(acceptor.open_streams() == 1u);
    corio::stream client3(executor, corio::test::transport_under_test());
    BOOST_TEST(co_await within(
        client3.async_connect(acceptor.local_endpoint(), asio::use_awaitable), step_limit));
    BOOST_TEST(co_await eventually([&] { return accept.done; }));
    BOOST_TEST(!accept.ec, accept.ec.message());
    BOOST_TEST((accept.stream.has_value() && accept.stream->is_open()));
    BOOST_TEST(acceptor.open_streams() == 2u);

    // Destroying a stream gives its place back as close does.
    { corio::stream gone(std::move(server2)); }
    BOOST_TEST(acceptor.open_streams() == 1u);
    BOOST_TEST(acceptor.refused_connections() == 2u);
}

CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(a_zero_limit_refuses_everyone, 20s) {
    auto executor = co_await asio::this_coro::executor;
    corio::acceptor acceptor(executor, corio::test::any_port_endpoint(),
                             corio::test::transport_under_test());
    acceptor.set_max_open_streams(0);
    pending_accept accept(acceptor);
    const auto ec = co_await how_refused(acceptor.local_endpoint());
    BOOST_TEST(is_refusal(ec), ec.message());
    BOOST_TEST(co_await eventually([&] { return acceptor.refused_connections() == 1; }));
    BOOST_TEST(!accept.done);
    acceptor.cancel();
    BOOST_TEST(co_await eventually([&] { return accept.done; }));
}

CORIO_COROUTINE_TEST_CASE(an_accepted_stream_may_outlive_its_acceptor) {
    auto executor = co_await asio::this_coro::executor;
    std::optional<corio::stream> client;
    std::optional<corio::stream> server;
    {
        corio::acceptor acceptor(executor, corio::test::any_port_endpoint(),
                                 corio::test::transport_under_test());
        acceptor.set_max_open_streams(1);
        auto pair = co_await admitted(acceptor);
        client.emplace(std::move(pair.first));
        server.emplace(std::move(pair.second));
        corio::acceptor moved(std::move(acceptor));
        BOOST_TEST(moved.open_streams() == 1u);
        BOOST_TEST(acceptor.open_streams() == 0u);
    }
    // Its slot's count belongs to the acceptor's state, which the slot keeps.
    server->close();
    BOOST_TEST(!server->is_open());
}
