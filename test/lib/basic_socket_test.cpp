#define BOOST_TEST_MODULE basic_socket
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <future>
#include <optional>
#include <thread>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>

#include <corio/acceptor.hpp>
#include <corio/rpoll_service.hpp>
#include <corio/stream.hpp>

#include "coroutine_test.hpp"
#include "primed_rsocket_services.hpp"
#include "transport_under_test.hpp"

// The reactor-style calls basic_socket shares with every corio socket, as
// boost::asio::basic_socket has them: async_wait, non_blocking, available,
// and the try-first read_some/write_some that non_blocking(true) gives.

CORIO_TEST_PRIMED_TRANSPORT_FIXTURE();

namespace asio = boost::asio;
using namespace std::chrono_literals;
using namespace asio::experimental::awaitable_operators;
using boost::system::error_code;
using corio::test::make_stream_pair;

namespace {

asio::awaitable<void> sleep_for(std::chrono::milliseconds d) {
    asio::steady_timer timer(co_await asio::this_coro::executor, d);
    co_await timer.async_wait(asio::use_awaitable);
}

/// Lets the context run other work until `done` or `limit`.
asio::awaitable<bool> wait_until(const bool& done, std::chrono::milliseconds limit = 5s) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done && std::chrono::steady_clock::now() < deadline)
        co_await sleep_for(1ms);
    co_return done;
}

struct wait_result {
    bool done = false;
    error_code ec;
};

/// Starts an async_wait for `what` with a callback that records its end.
template <class Socket>
void start_wait(Socket& s, asio::socket_base::wait_type what, wait_result& result,
                asio::cancellation_slot slot = {}) {
    result = {};
    s.async_wait(what, asio::bind_cancellation_slot(slot, [&result](error_code ec) {
                     result.ec = ec;
                     result.done = true;
                 }));
}

/// Reads with the try-first pattern: read_some on a non_blocking socket,
/// async_wait(wait_read) only when it would block.
asio::awaitable<std::size_t> try_then_wait_read(corio::stream& s, asio::mutable_buffer buffer) {
    for (int tries = 0; tries < 100000; ++tries) {
        error_code ec;
        const std::size_t n = s.read_some(buffer, ec);
        if (ec != asio::error::would_block) {
            BOOST_TEST_REQUIRE(!ec, ec.message());
            co_return n;
        }
        co_await s.async_wait(corio::stream::wait_read, asio::use_awaitable);
    }
    BOOST_FAIL("read_some kept reporting would_block after the socket was readable");
    co_return 0;
}

} // namespace

CORIO_COROUTINE_TEST_CASE(wait_read_completes_only_once_the_peer_has_written) {
    auto [client, server] = co_await make_stream_pair();
    wait_result result;
    start_wait(server, corio::stream::wait_read, result);
    BOOST_TEST(!co_await wait_until(result.done, 50ms));
    const std::array<unsigned char, 5> sent{1, 2, 3, 4, 5};
    co_await asio::async_write(client, asio::buffer(sent), asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await wait_until(result.done));
    BOOST_TEST(!result.ec, result.ec.message());
    // The wait moved nothing: all five bytes are still there to read.
    std::array<unsigned char, 5> got{};
    co_await asio::async_read(server, asio::buffer(got), asio::use_awaitable);
    BOOST_TEST(got == sent);
}

CORIO_COROUTINE_TEST_CASE(wait_write_completes_on_a_connected_stream_with_room) {
    auto [client, server] = co_await make_stream_pair();
    co_await client.async_wait(corio::stream::wait_write, asio::use_awaitable);
    // The other tokens: deferred, and as_tuple around it.
    co_await client.async_wait(corio::stream::wait_write, asio::deferred);
    auto [ec] = co_await client.async_wait(corio::stream::wait_write,
                                           asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(!ec, ec.message());
}

BOOST_AUTO_TEST_CASE(async_wait_with_a_future_from_another_thread) {
    asio::io_context io;
    corio::set_poll_mode(io, corio::test::poll_mode_under_test());
    std::future<void> waited;
    // Set once `waited` is: the main thread reads it only after.
    std::atomic<bool> started{false};
    std::optional<corio::stream> client;
    std::optional<corio::stream> server;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            auto pair = co_await make_stream_pair();
            client.emplace(std::move(pair.first));
            server.emplace(std::move(pair.second));
            waited = client->async_wait(corio::stream::wait_write, asio::use_future);
            started.store(true, std::memory_order_release);
        },
        asio::detached);
    std::thread runner([&] { io.run_for(10s); });
    // Bounded: the io_context stops by itself at 10 s.
    for (int i = 0; i < 1000 && !started.load(std::memory_order_acquire); ++i)
        std::this_thread::sleep_for(10ms);
    BOOST_TEST_REQUIRE(started.load(std::memory_order_acquire));
    BOOST_TEST_REQUIRE(waited.valid());
    BOOST_TEST((waited.wait_for(10s) == std::future_status::ready));
    BOOST_CHECK_NO_THROW(waited.get());
    io.stop();
    runner.join();
}

CORIO_COROUTINE_TEST_CASE(non_blocking_read_some_reports_would_block_then_reads) {
    auto [client, server] = co_await make_stream_pair();
    BOOST_TEST(!server.non_blocking());
    server.non_blocking(true);
    BOOST_TEST(server.non_blocking());
    std::array<unsigned char, 16> got{};
    error_code ec;
    BOOST_TEST(server.read_some(asio::buffer(got), ec) == 0u);
    BOOST_TEST((ec == asio::error::would_block), ec.message());

    const std::array<unsigned char, 3> sent{7, 8, 9};
    co_await asio::async_write(client, asio::buffer(sent), asio::use_awaitable);
    std::size_t total = 0;
    while (total < sent.size())
        total += co_await try_then_wait_read(server, asio::buffer(got.data() + total, 16 - total));
    BOOST_TEST(total == sent.size());
    BOOST_TEST((std::equal(sent.begin(), sent.end(), got.begin())));

    // Back to blocking: read_some waits for the peer's next bytes.
    server.non_blocking(false);
    co_await asio::async_write(client, asio::buffer(sent), asio::use_awaitable);
    BOOST_TEST(server.read_some(asio::buffer(got)) >= 1u);
}

// A wait right after read_some said would_block makes no look of its own
// (socket_impl::would_block_note): it relies on the bytes that come after
// that call raising a report. Here they come, and are reported, before the
// wait starts, while nothing waits: the wait must still see them. On tcp
// this is the io_context's edge-triggered reactor, whose event then found no
// wait to end; a first round leaves the socket registered there.
CORIO_COROUTINE_TEST_CASE(a_wait_after_would_block_sees_bytes_that_came_before_it) {
    auto [client, server] = co_await make_stream_pair();
    server.non_blocking(true);
    std::array<unsigned char, 16> got{};
    const std::array<unsigned char, 3> sent{1, 2, 3};
    for (int round = 0; round < 3; ++round) {
        error_code ec;
        BOOST_TEST(server.read_some(asio::buffer(got), ec) == 0u);
        BOOST_TEST_REQUIRE((ec == asio::error::would_block), ec.message());
        co_await asio::async_write(client, asio::buffer(sent), asio::use_awaitable);
        // Long enough for the reactor (or poller) to see the bytes arrive.
        co_await sleep_for(20ms);
        wait_result result;
        start_wait(server, corio::stream::wait_read, result);
        BOOST_TEST_REQUIRE(co_await wait_until(result.done), "round " << round);
        BOOST_TEST(!result.ec, result.ec.message());
        std::size_t total = 0;
        while (total < sent.size())
            total += co_await try_then_wait_read(server, asio::buffer(got.data() + total, 16 - total));
        BOOST_TEST(total == sent.size());
    }
}

// The other order: the wait starts right after would_block, with nothing
// there, and the bytes come while it waits. Its end is the report itself,
// and the bytes are still there for the read after it.
CORIO_COROUTINE_TEST_CASE(a_wait_after_would_block_ends_when_the_peer_writes) {
    auto [client, server] = co_await make_stream_pair();
    server.non_blocking(true);
    std::array<unsigned char, 16> got{};
    for (unsigned char round = 0; round < 20; ++round) {
        error_code ec;
        BOOST_TEST(server.read_some(asio::buffer(got), ec) == 0u);
        BOOST_TEST_REQUIRE((ec == asio::error::would_block), ec.message());
        wait_result result;
        start_wait(server, corio::stream::wait_read, result);
        BOOST_TEST(!co_await wait_until(result.done, 10ms));
        const std::array<unsigned char, 2> sent{round, 0xee};
        co_await asio::async_write(client, asio::buffer(sent), asio::use_awaitable);
        BOOST_TEST_REQUIRE(co_await wait_until(result.done), "round " << int(round));
        BOOST_TEST(!result.ec, result.ec.message());
        std::size_t total = 0;
        while (total < sent.size())
            total += co_await try_then_wait_read(server, asio::buffer(got.data() + total, 16 - total));
        BOOST_TEST_REQUIRE(total == sent.size());
        BOOST_TEST(got[0] == round);
    }
}

CORIO_COROUTINE_TEST_CASE(non_blocking_write_some_fills_the_buffers_then_wait_write_waits) {
    auto [client, server] = co_await make_stream_pair();
    client.non_blocking(true);
    const std::vector<unsigned char> block(64 * 1024, 0x5a);
    std::size_t written = 0;
    error_code ec;
    // Bounded: the send and receive buffers hold megabytes at most.
    for (int i = 0; i < 100000 && !ec; ++i)
        written += client.write_some(asio::buffer(block), ec);
    BOOST_TEST_REQUIRE((ec == asio::error::would_block), ec.message());
    BOOST_TEST(written > 0u);

    wait_result result;
    start_wait(client, corio::stream::wait_write, result);
    BOOST_TEST(!co_await wait_until(result.done, 50ms));
    // The peer drains what was written: room again.
    std::vector<unsigned char> sink(written);
    co_await asio::async_read(server, asio::buffer(sink), asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await wait_until(result.done));
    BOOST_TEST(!result.ec, result.ec.message());
    BOOST_TEST((std::count(sink.begin(), sink.end(), 0x5a) == static_cast<long>(written)));
}

CORIO_COROUTINE_TEST_CASE(available_counts_what_has_arrived) {
    auto [client, server] = co_await make_stream_pair();
    BOOST_TEST(server.available() == 0u);
    const std::vector<unsigned char> sent(100, 0x11);
    co_await asio::async_write(client, asio::buffer(sent), asio::use_awaitable);
    co_await server.async_wait(corio::stream::wait_read, asio::use_awaitable);
    // rsockets may take the bytes in more than one message: wait for all.
    std::size_t seen = 0;
    for (int i = 0; i < 1000 && (seen = server.available()) < sent.size(); ++i)
        co_await sleep_for(1ms);
    BOOST_TEST(seen == sent.size());
    // Counting consumed nothing.
    std::vector<unsigned char> got(sent.size());
    co_await asio::async_read(server, asio::buffer(got), asio::use_awaitable);
    BOOST_TEST((got == sent));
    BOOST_TEST(server.available() == 0u);
}

CORIO_COROUTINE_TEST_CASE(wait_error_holds_back_no_read_and_ends_on_hang_up) {
    auto [client, server] = co_await make_stream_pair();
    wait_result error_wait;
    start_wait(server, corio::stream::wait_error, error_wait);
    // Data is no error, and a read beside the pending error wait goes on.
    const std::array<unsigned char, 4> sent{4, 3, 2, 1};
    co_await asio::async_write(client, asio::buffer(sent), asio::use_awaitable);
    std::array<unsigned char, 4> got{};
    co_await asio::async_read(server, asio::buffer(got), asio::use_awaitable);
    BOOST_TEST(got == sent);
    BOOST_TEST(!error_wait.done);
    // Both directions ended: a hang-up, which ends the error wait.
    server.shutdown(corio::stream::shutdown_send);
    client.close();
    BOOST_TEST_REQUIRE(co_await wait_until(error_wait.done));
    BOOST_TEST(!error_wait.ec, error_wait.ec.message());
}

CORIO_COROUTINE_TEST_CASE(a_pending_wait_read_holds_back_no_write) {
    auto [client, server] = co_await make_stream_pair();
    wait_result read_wait;
    start_wait(client, corio::stream::wait_read, read_wait);
    const std::array<unsigned char, 2> sent{1, 2};
    co_await asio::async_write(client, asio::buffer(sent), asio::use_awaitable);
    std::array<unsigned char, 2> got{};
    co_await asio::async_read(server, asio::buffer(got), asio::use_awaitable);
    BOOST_TEST(got == sent);
    BOOST_TEST(!read_wait.done);
    co_await asio::async_write(server, asio::buffer(sent), asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await wait_until(read_wait.done));
    BOOST_TEST(!read_wait.ec, read_wait.ec.message());
}

CORIO_COROUTINE_TEST_CASE(per_operation_cancellation_ends_a_wait_of_each_type) {
    auto [client, server] = co_await make_stream_pair();
    for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                      asio::cancellation_type::total}) {
        asio::cancellation_signal signal;
        wait_result result;
        start_wait(server, corio::stream::wait_read, result, signal.slot());
        BOOST_TEST(!co_await wait_until(result.done, 20ms));
        signal.emit(type);
        BOOST_TEST_REQUIRE(co_await wait_until(result.done));
        BOOST_TEST((result.ec == asio::error::operation_aborted), result.ec.message());
    }
    // The socket is still usable after the cancelled waits.
    const std::array<unsigned char, 1> one{42};
    co_await asio::async_write(client, asio::buffer(one), asio::use_awaitable);
    co_await server.async_wait(corio::stream::wait_read, asio::use_awaitable);
}

CORIO_COROUTINE_TEST_CASE(cancel_and_close_end_pending_waits) {
    auto [client, server] = co_await make_stream_pair();
    wait_result read_wait;
    wait_result error_wait;
    start_wait(server, corio::stream::wait_read, read_wait);
    start_wait(server, corio::stream::wait_error, error_wait);
    server.cancel();
    BOOST_TEST_REQUIRE(co_await wait_until(read_wait.done));
    BOOST_TEST_REQUIRE(co_await wait_until(error_wait.done));
    BOOST_TEST((read_wait.ec == asio::error::operation_aborted));
    BOOST_TEST((error_wait.ec == asio::error::operation_aborted));

    start_wait(server, corio::stream::wait_read, read_wait);
    server.close();
    BOOST_TEST_REQUIRE(co_await wait_until(read_wait.done));
    BOOST_TEST((read_wait.ec == asio::error::operation_aborted));
}

CORIO_COROUTINE_TEST_CASE(a_closed_socket_refuses_every_reactor_call) {
    corio::stream s(co_await asio::this_coro::executor, corio::test::transport_under_test());
    auto [ec] = co_await s.async_wait(corio::stream::wait_read, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((ec == asio::error::bad_descriptor), ec.message());
    error_code call_ec;
    s.non_blocking(true, call_ec);
    BOOST_TEST((call_ec == asio::error::bad_descriptor));
    BOOST_TEST(!s.non_blocking());
    BOOST_CHECK_THROW(s.available(), boost::system::system_error);
    std::array<unsigned char, 1> byte{};
    BOOST_TEST(s.read_some(asio::buffer(byte), call_ec) == 0u);
    BOOST_TEST((call_ec == asio::error::bad_descriptor));
}

CORIO_COROUTINE_TEST_CASE(an_unknown_wait_type_is_refused) {
    auto [client, server] = co_await make_stream_pair();
    // 3 is inside the enum's range (its values need two bits), so the cast is
    // defined, but it names no wait_type.
    const auto bogus = static_cast<corio::stream::wait_type>(3);
    auto [ec] = co_await client.async_wait(bogus, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((ec == asio::error::invalid_argument), ec.message());
}

CORIO_COROUTINE_TEST_CASE(a_reopened_socket_starts_blocking) {
    auto [client, server] = co_await make_stream_pair();
    client.non_blocking(true);
    client.close();
    client.open(corio::test::transport_under_test(), corio::test::any_port_endpoint().protocol());
    BOOST_TEST(!client.non_blocking());
}

CORIO_COROUTINE_TEST_CASE(acceptor_wait_read_completes_once_a_client_connects) {
    const auto executor = co_await asio::this_coro::executor;
    corio::acceptor acceptor(executor, corio::test::any_port_endpoint(),
                             corio::test::transport_under_test());
    BOOST_TEST(!acceptor.non_blocking());
    acceptor.non_blocking(true);
    BOOST_TEST(acceptor.non_blocking());
    wait_result result;
    start_wait(acceptor, asio::socket_base::wait_read, result);
    BOOST_TEST(!co_await wait_until(result.done, 50ms));
    corio::stream client(executor, corio::test::transport_under_test());
    co_await client.async_connect(acceptor.local_endpoint(), asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await wait_until(result.done));
    BOOST_TEST(!result.ec, result.ec.message());
    // The wait accepted nothing: the connection is still there to accept.
    auto server = co_await acceptor.async_accept(asio::use_awaitable);
    BOOST_TEST(server.is_open());
}

CORIO_COROUTINE_TEST_CASE(try_first_ping_pong_with_and_without_the_adaptive_spin) {
    auto& service = corio::rpoll_service_of(co_await asio::this_coro::executor);
    BOOST_TEST((service.spin_budget() == corio::rpoll_service::default_spin_budget));
    for (auto budget : {std::chrono::nanoseconds(0), std::chrono::nanoseconds(50us)}) {
        service.set_spin_budget(budget);
        BOOST_TEST((service.spin_budget() == budget));
        auto [client, server] = co_await make_stream_pair();
        client.non_blocking(true);
        server.non_blocking(true);
        std::array<unsigned char, 64> ball{};
        for (int round = 0; round < 200; ++round) {
            ball[0] = static_cast<unsigned char>(round);
            co_await asio::async_write(client, asio::buffer(ball), asio::use_awaitable);
            std::array<unsigned char, 64> got{};
            std::size_t n = 0;
            while (n < got.size())
                n += co_await try_then_wait_read(server, asio::buffer(got.data() + n, 64 - n));
            BOOST_TEST_REQUIRE(got[0] == static_cast<unsigned char>(round));
            co_await asio::async_write(server, asio::buffer(got), asio::use_awaitable);
            co_await asio::async_read(client, asio::buffer(ball), asio::use_awaitable);
        }
    }
    service.set_spin_budget(corio::rpoll_service::default_spin_budget);
}
