#define BOOST_TEST_MODULE stall_timeout
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <corio/acceptor.hpp>
#include <corio/detail/tcp_frame.hpp>
#include <corio/socket_base.hpp>
#include <corio/stall_timeout.hpp>
#include <corio/stream.hpp>

#include "coroutine_test.hpp"
#include "primed_rsocket_services.hpp"
#include "skip_if.hpp"
#include "transport_under_test.hpp"

CORIO_TEST_PRIMED_TRANSPORT_FIXTURE();

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;

namespace {
/// Whether a thread of this process has the name `name` (/proc/self/task).
bool thread_named(const std::string& name) {
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream comm(task.path() / "comm");
        std::string line;
        if (std::getline(comm, line) && line == name)
            return true;
    }
    return false;
}
} // namespace
using clock_type = std::chrono::steady_clock;
using corio::test::make_stream_pair;

namespace {

asio::awaitable<void> pause(clock_type::duration d) {
    asio::steady_timer timer(co_await asio::this_coro::executor, d);
    co_await timer.async_wait(asio::use_awaitable);
}

/// Where one operation started with a callback ended.
struct outcome {
    bool done = false;
    error_code ec;
    std::size_t bytes = 0;
    clock_type::time_point at{};

    auto handler() {
        return [this](error_code e, std::size_t n) {
            ec = e;
            bytes = n;
            at = clock_type::now();
            done = true;
        };
    }
};

/// Polls until every one of `outcomes` is done or `limit` passed.
template <class... Outcomes>
asio::awaitable<bool> all_done(clock_type::duration limit, const Outcomes&... outcomes) {
    const auto deadline = clock_type::now() + limit;
    while (!(outcomes.done && ...)) {
        if (clock_type::now() >= deadline)
            co_return false;
        co_await pause(2ms);
    }
    co_return true;
}

/// Writes `s` full (the peer reads nothing) and leaves one write pending in
/// `pending`; returns when it has stayed pending for 50 ms.
asio::awaitable<void> leave_a_write_pending(corio::stream& s, const std::vector<char>& block,
                                            outcome& pending) {
    for (int i = 0; i < 10000; ++i) {
        pending = {};
        s.async_write_some(asio::buffer(block), pending.handler());
        if (!co_await all_done(50ms, pending))
            co_return;
        BOOST_TEST_REQUIRE(!pending.ec, pending.ec.message());
    }
    BOOST_FAIL("the send buffers never filled");
}

} // namespace

CORIO_COROUTINE_TEST_CASE(off_by_default_and_reads_back_what_was_set) {
    auto pair = co_await make_stream_pair();
    corio::stream& client = pair.first;
    corio::stall_timeout option(123ms);
    client.get_option(option);
    BOOST_TEST(option.value().count() == 0);
    client.set_option(corio::stall_timeout(250ms));
    client.get_option(option);
    BOOST_TEST(option.value().count() == 250);
    client.set_option(corio::stall_timeout(0ms));
    client.get_option(option);
    BOOST_TEST(option.value().count() == 0);
    // A connection still on the way, or none, takes no stall timeout.
    error_code ec;
    client.set_option(corio::stall_timeout(-1ms), ec);
    BOOST_TEST((ec == asio::error::invalid_argument));
    corio::stream unconnected(co_await asio::this_coro::executor, corio::test::transport_under_test());
    unconnected.set_option(corio::stall_timeout(1s), ec);
    BOOST_TEST((ec == asio::error::bad_descriptor));
    unconnected.open(corio::test::transport_under_test(), corio::test::any_port_endpoint().protocol());
    unconnected.set_option(corio::stall_timeout(1s), ec);
    BOOST_TEST((ec == asio::error::not_connected));
    client.close();
    client.get_option(option, ec);
    BOOST_TEST((ec == asio::error::bad_descriptor));
}

CORIO_COROUTINE_TEST_CASE(without_it_a_write_to_a_peer_that_stops_reading_stays_pending) {
    auto pair = co_await make_stream_pair();
    corio::stream& client = pair.first;
    const std::vector<char> block(64 * 1024, 'x');
    outcome write;
    co_await leave_a_write_pending(client, block, write);
    BOOST_TEST_REQUIRE(!write.done);
    co_await pause(600ms);
    BOOST_TEST(!write.done);
    client.cancel();
    BOOST_TEST_REQUIRE(co_await all_done(5s, write));
    BOOST_TEST((write.ec == asio::error::operation_aborted));
}

CORIO_COROUTINE_TEST_CASE(a_stall_ends_every_pending_operation_and_every_later_one) {
    auto pair = co_await make_stream_pair();
    corio::stream& client = pair.first;
    corio::stream& server = pair.second;
    constexpr auto timeout = 600ms;
    client.set_option(corio::stall_timeout(timeout));
    const std::vector<char> block(64 * 1024, 'x');
    outcome write, read;
    co_await leave_a_write_pending(client, block, write);
    BOOST_TEST_REQUIRE(!write.done);
    std::vector<char> in(16);
    client.async_read_some(asio::buffer(in), read.handler());

    // The server sends a byte every 100 ms: bytes move on the client's
    // socket, so its pending write has not stalled, for three timeouts.
    const auto flowing_until = clock_type::now() + 3 * timeout;
    std::size_t received = 0;
    clock_type::time_point last_byte{};
    while (clock_type::now() < flowing_until) {
        co_await asio::async_write(server, asio::buffer("y", 1), asio::use_awaitable);
        BOOST_TEST_REQUIRE(co_await all_done(2s, read));
        BOOST_TEST_REQUIRE(!read.ec, read.ec.message());
        received += read.bytes;
        last_byte = read.at;
        read = {};
        client.async_read_some(asio::buffer(in), read.handler());
        co_await pause(100ms);
    }
    BOOST_TEST(!write.done);
    BOOST_TEST(received > 0u);

    // Then nothing moves: both end with timed_out, a timeout after the last byte.
    BOOST_TEST_REQUIRE(co_await all_done(10 * timeout, write, read));
    BOOST_TEST((write.ec == asio::error::timed_out), write.ec.message());
    BOOST_TEST((read.ec == asio::error::timed_out), read.ec.message());
    BOOST_TEST(write.bytes == 0u);
    // The clock ran from the call that moved the last byte, a little before
    // its handler ran.
    BOOST_TEST((write.at - last_byte >= timeout - 50ms));
    BOOST_TEST((read.at - last_byte >= timeout - 50ms));

    // Like a reset: later operations fail at once, until close.
    outcome later_write, later_read;
    client.async_write_some(asio::buffer(block), later_write.handler());
    client.async_read_some(asio::buffer(in), later_read.handler());
    BOOST_TEST_REQUIRE(co_await all_done(timeout / 2, later_write, later_read));
    BOOST_TEST((later_write.ec == asio::error::timed_out));
    BOOST_TEST((later_read.ec == asio::error::timed_out));
    error_code ec;
    client.close(ec);
    BOOST_TEST(!ec, ec.message());
}

CORIO_COROUTINE_TEST_CASE(a_read_that_waits_for_silence_times_out_and_one_set_later_too) {
    auto pair = co_await make_stream_pair();
    corio::stream& client = pair.first;
    std::vector<char> in(16);
    // Pending before the option is set: watched from the set on.
    outcome read;
    client.async_read_some(asio::buffer(in), read.handler());
    co_await pause(50ms);
    BOOST_TEST_REQUIRE(!read.done);
    const auto set_at = clock_type::now();
    client.set_option(corio::stall_timeout(200ms));
    BOOST_TEST_REQUIRE(co_await all_done(3s, read));
    BOOST_TEST((read.ec == asio::error::timed_out), read.ec.message());
    BOOST_TEST((read.at - set_at >= 180ms));
    // The watch ran on a thread of its own, named for top -H and gdb; so
    // did the rsocket's wait in thread mode.
    BOOST_TEST(thread_named("corio-stall"));
    if (corio::test::transport_under_test() == corio::transport::rsocket &&
        corio::test::poll_mode_under_test() == corio::poll_mode::thread)
        BOOST_TEST(thread_named("corio-poller"));
}

CORIO_COROUTINE_TEST_CASE(the_clock_starts_when_the_stream_begins_to_wait) {
    // Idle time with nothing pending is no stall: a read started after a
    // quiet spell still gets a whole timeout.
    auto pair = co_await make_stream_pair();
    corio::stream& client = pair.first;
    corio::stream& server = pair.second;
    client.set_option(corio::stall_timeout(600ms));
    std::vector<char> in(16);
    outcome first;
    client.async_read_some(asio::buffer(in), first.handler());
    co_await asio::async_write(server, asio::buffer("z", 1), asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await all_done(2s, first));
    BOOST_TEST_REQUIRE(!first.ec);
    // 350 ms quiet, then 400 ms pending: 750 ms since the last byte, but
    // only 400 ms of waiting.
    co_await pause(350ms);
    outcome second;
    client.async_read_some(asio::buffer(in), second.handler());
    co_await pause(400ms);
    co_await asio::async_write(server, asio::buffer("z", 1), asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await all_done(2s, second));
    BOOST_TEST(!second.ec, second.ec.message());
    BOOST_TEST(second.bytes == 1u);
}

CORIO_COROUTINE_TEST_CASE(a_peer_that_stops_inside_a_tcp_frame_times_out,
                          *corio::test::skip_if(corio::test::tcp_only)) {
    // The TCP emulation's frames (doc/tcp-transport.md) are a protocol of
    // corio's own: a plain kernel peer sends a valid hello and half a frame
    // header, then nothing. The framed stream's read holds the half header
    // and waits; the stall timeout ends it.
    auto executor = co_await asio::this_coro::executor;
    corio::acceptor acceptor(executor);
    acceptor.open(corio::transport::tcp, asio::ip::tcp::v4());
    acceptor.set_option(corio::socket_base::iomap_size(1));
    acceptor.bind(corio::test::any_port_endpoint());
    acceptor.listen();
    asio::ip::tcp::socket peer(executor);
    co_await peer.async_connect(acceptor.local_endpoint(), asio::use_awaitable);
    corio::stream server = co_await acceptor.async_accept(asio::use_awaitable);
    namespace frame = corio::detail::tcp_frame;
    const auto hello = frame::encode_hello(1);
    const auto header = frame::encode_header(frame::frame_type::data, 8, 0);
    co_await asio::async_write(peer, asio::buffer(hello), asio::use_awaitable);
    co_await asio::async_write(peer, asio::buffer(header.data(), header.size() / 2),
                               asio::use_awaitable);
    server.set_option(corio::stall_timeout(300ms));
    std::vector<char> in(16);
    outcome read;
    const auto start = clock_type::now();
    server.async_read_some(asio::buffer(in), read.handler());
    BOOST_TEST_REQUIRE(co_await all_done(5s, read));
    BOOST_TEST((read.ec == asio::error::timed_out), read.ec.message());
    BOOST_TEST((read.at - start >= 280ms));
}
