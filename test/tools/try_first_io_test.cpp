#define BOOST_TEST_MODULE try_first_io
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <corio/poll_mode.hpp>
#include <corio/stream.hpp>

#include <coriostream/try_first_io.hpp>

#include "coroutine_test.hpp"
#include "transport_under_test.hpp"

// try_all and rest_of_all over kernel TCP on the loopback: a call that can
// go through at once finishes in try_all, and one that would block is
// finished by rest_of_all from where try_all stopped.

namespace asio = boost::asio;
using coriostream::io_call;
using namespace asio::experimental::awaitable_operators;

namespace {

/// Two connected streams in non_blocking mode, as a session puts its
/// stream before the data paths' first call.
asio::awaitable<std::pair<corio::stream, corio::stream>> make_non_blocking_pair() {
    auto pair = co_await corio::test::make_tcp_stream_pair();
    pair.first.non_blocking(true);
    pair.second.non_blocking(true);
    co_return pair;
}

/// `what` over all of `data` the way the data paths make it.
asio::awaitable<boost::system::error_code> all(corio::stream& stream, io_call what,
                                               std::span<std::uint8_t> data) {
    std::size_t done = 0;
    boost::system::error_code ec;
    if (!coriostream::try_all(stream, what, data, 0, done, ec))
        ec = co_await coriostream::rest_of_all(stream, what, data, 0, done);
    co_return ec;
}

} // namespace

CORIO_COROUTINE_TEST_CASE(a_call_that_can_go_through_finishes_without_waiting) {
    auto [client, server] = co_await make_non_blocking_pair();
    std::vector<std::uint8_t> sent(64);
    std::iota(sent.begin(), sent.end(), std::uint8_t{1});
    std::vector<std::uint8_t> received(64);

    // Nothing to read yet: it would block, and says so without an error.
    std::size_t done = 0;
    boost::system::error_code ec;
    BOOST_TEST(!coriostream::try_all(server, io_call::read, received, 0, done, ec));
    BOOST_TEST(!ec);
    BOOST_TEST(done == 0u);

    BOOST_TEST(coriostream::try_all(client, io_call::write, sent, 0, done, ec));
    BOOST_TEST(!ec);
    BOOST_TEST(done == sent.size());

    ec = co_await coriostream::rest_of_all(server, io_call::read, received, 0, 0);
    BOOST_TEST(!ec);
    BOOST_TEST(received == sent);
}

CORIO_COROUTINE_TEST_CASE(rest_of_all_finishes_a_write_that_filled_the_socket) {
    auto [client, server] = co_await make_non_blocking_pair();
    // Far more than the loopback sockets' buffers hold while no one reads:
    // the write stops part way.
    std::vector<std::uint8_t> sent(16 << 20);
    std::iota(sent.begin(), sent.end(), std::uint8_t{0});
    std::size_t done = 0;
    boost::system::error_code ec;
    BOOST_TEST(!coriostream::try_all(client, io_call::write, sent, 0, done, ec));
    BOOST_TEST(!ec);
    BOOST_TEST(done > 0u);
    BOOST_TEST(done < sent.size());

    std::vector<std::uint8_t> received(sent.size());
    const auto [written, read] =
        co_await (coriostream::rest_of_all(client, io_call::write, sent, 0, done) &&
                  all(server, io_call::read, received));
    BOOST_TEST(!written);
    BOOST_TEST(!read);
    BOOST_TEST((received == sent));
}

CORIO_COROUTINE_TEST_CASE(a_read_the_peer_ends_first_fails_with_eof) {
    auto [client, server] = co_await make_non_blocking_pair();
    std::vector<std::uint8_t> sent(10, 0x5a);
    BOOST_TEST(!(co_await all(client, io_call::write, sent)));
    client.close();
    std::vector<std::uint8_t> received(20);
    const auto ec = co_await all(server, io_call::read, received);
    BOOST_TEST((ec == asio::error::eof));
}

BOOST_AUTO_TEST_CASE(only_busy_mode_calls_again_before_it_waits) {
    using coriostream::thread_sharing;
    for (const auto sharing : {thread_sharing::stream_alone, thread_sharing::other_streams}) {
        BOOST_TEST(coriostream::attempts_before_wait(corio::poll_mode::busy, sharing) > 1);
        BOOST_TEST(coriostream::attempts_before_wait(corio::poll_mode::thread, sharing) == 1);
    }
}

// Beside other streams a busy wait gives the thread back sooner than a
// stream alone on its io_context does.
BOOST_AUTO_TEST_CASE(a_stream_alone_calls_again_more_often_than_one_beside_others) {
    using coriostream::thread_sharing;
    BOOST_TEST(
        coriostream::attempts_before_wait(corio::poll_mode::busy, thread_sharing::stream_alone) >
        coriostream::attempts_before_wait(corio::poll_mode::busy, thread_sharing::other_streams));
}

// With the peers' halves queued for the same threads the answer may need the
// thread the call holds: one call, then the wait lets the peer run.
BOOST_AUTO_TEST_CASE(a_stream_whose_peer_waits_for_its_thread_calls_once) {
    for (const auto mode : {corio::poll_mode::busy, corio::poll_mode::thread})
        BOOST_TEST(coriostream::attempts_before_wait(
                       mode, coriostream::thread_sharing::peer_on_these_threads) == 1);
}

CORIO_COROUTINE_TEST_CASE(calls_made_again_keep_what_moved_and_end_without_an_error) {
    auto [client, server] = co_await make_non_blocking_pair();
    std::vector<std::uint8_t> sent(64);
    std::iota(sent.begin(), sent.end(), std::uint8_t{7});
    BOOST_TEST(!(co_await all(client, io_call::write, sent)));

    // Half of what the read asks for is there: it takes that, then finds
    // the rest would block on each of its attempts.
    std::vector<std::uint8_t> received(2 * sent.size());
    std::size_t done = 0;
    boost::system::error_code ec;
    while (done < sent.size()) {
        co_await server.async_wait(corio::stream::wait_read, asio::use_awaitable);
        BOOST_TEST_REQUIRE(!coriostream::try_all(server, io_call::read, received, 0, done, ec, 8));
        BOOST_TEST_REQUIRE(!ec);
    }
    BOOST_TEST(done == sent.size());
    BOOST_TEST(std::equal(sent.begin(), sent.end(), received.begin()));

    // The rest, once it comes, finishes the read where the attempts left it.
    BOOST_TEST(!(co_await all(client, io_call::write, sent)));
    ec = co_await coriostream::rest_of_all(server, io_call::read, received, 0, done);
    BOOST_TEST(!ec);
    BOOST_TEST(std::equal(sent.begin(), sent.end(), received.begin() + sent.size()));
}

CORIO_COROUTINE_TEST_CASE(a_call_made_again_takes_what_arrives_meanwhile) {
    auto [client, server] = co_await make_non_blocking_pair();
    std::vector<std::uint8_t> sent(64);
    std::iota(sent.begin(), sent.end(), std::uint8_t{3});
    std::vector<std::uint8_t> received(sent.size());

    // Nothing is there when the read starts: the other thread writes once
    // the read has said so, so only a call made again can take the bytes.
    std::size_t done = 0;
    boost::system::error_code ec;
    BOOST_TEST_REQUIRE(!coriostream::try_all(server, io_call::read, received, 0, done, ec));
    // A reference of its own: clang 14 cannot capture a structured binding.
    auto& writing_end = client;
    std::thread writer([&writing_end, &sent] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        boost::system::error_code write_ec;
        std::size_t put = 0;
        while (put < sent.size() && !write_ec)
            put += writing_end.write_some(asio::buffer(sent) + put, write_ec);
    });
    const bool finished = coriostream::try_all(server, io_call::read, received, 0, done, ec,
                                               std::numeric_limits<int>::max());
    writer.join();
    BOOST_TEST(finished);
    BOOST_TEST(!ec);
    BOOST_TEST(done == sent.size());
    BOOST_TEST((received == sent));
}

// A stream closed under the data path (the watchdog's close) ends the call
// with bad_descriptor at once, whether or not it had gone through a wait.
CORIO_COROUTINE_TEST_CASE(a_closed_stream_ends_the_call_with_bad_descriptor) {
    auto [client, server] = co_await make_non_blocking_pair();
    std::vector<std::uint8_t> data(64);
    std::size_t done = 0;
    boost::system::error_code ec;
    server.close();
    BOOST_TEST(coriostream::try_all(server, io_call::read, data, 0, done, ec));
    BOOST_TEST((ec == asio::error::bad_descriptor));
    BOOST_TEST(done == 0u);

    client.close();
    ec = co_await coriostream::rest_of_all(client, io_call::write, data, 0, 0);
    BOOST_TEST((ec == asio::error::bad_descriptor));
}
