#define BOOST_TEST_MODULE zero_copy_deadline
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstddef>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <corio/detail/channel_wire.hpp>
#include <corio/stall_timeout.hpp>
#include <corio/zero_copy_channel.hpp>

#include "coroutine_test.hpp"
#include "primed_rsocket_services.hpp"
#include "transport_under_test.hpp"

// A peer that stalls at each step of the zero-copy channel's handshake
// (detail/zero_copy_deadline): the other side gives up with timed_out within
// its deadline, instead of holding its stream and region forever. The
// stalling peer is a plain stream that says nothing, or a part of a hello.
// Past the handshake the channel's steps are reads and writes on its
// stream, which corio::stall_timeout bounds: the last case stalls in the
// middle of a notify.

CORIO_TEST_PRIMED_TRANSPORT_FIXTURE();

namespace asio = boost::asio;
namespace wire = corio::detail::channel_wire;
using namespace std::chrono_literals;
using boost::system::error_code;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr auto deadline = 500ms;
/// Generous for a loaded machine and the TCG guest; the point is that it ends.
constexpr auto late = 10s;

/// Runs `handshake` and checks it ends with timed_out, not before the
/// deadline and well before `late`.
template <class Channel>
asio::awaitable<void> expect_timeout(Channel& channel) {
    channel.set_handshake_timeout(deadline);
    const auto start = clock_type::now();
    auto [ec] = co_await channel.async_handshake(asio::as_tuple(asio::use_awaitable));
    const auto took = clock_type::now() - start;
    BOOST_TEST((ec == asio::error::timed_out), ec.message());
    BOOST_TEST((took >= deadline - 50ms));
    BOOST_TEST((took < late), std::chrono::duration<double>(took).count() << " s");
    // The channel is failed for good: a second handshake says so at once.
    auto [again] = co_await channel.async_handshake(asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((again == asio::error::timed_out), again.message());
}

} // namespace

CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(a_receiver_gives_up_on_a_silent_sender, 30s) {
    auto [peer, server] = co_await corio::test::make_mappable_stream_pair(1);
    corio::zero_copy_receiver receiver(std::move(server), {4, 4096});
    co_await expect_timeout(receiver);
    BOOST_TEST(peer.is_open());
}

CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(a_receiver_gives_up_on_half_a_hello, 30s) {
    auto [peer, server] = co_await corio::test::make_mappable_stream_pair(1);
    const auto hello = wire::encode({wire::role::sender, 0, 0, 0});
    co_await asio::async_write(peer, asio::buffer(hello.data(), hello.size() / 2),
                               asio::use_awaitable);
    corio::zero_copy_receiver receiver(std::move(server), {4, 4096});
    co_await expect_timeout(receiver);
}

CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(a_sender_gives_up_on_a_receiver_that_never_answers, 30s) {
    auto [client, peer] = co_await corio::test::make_mappable_stream_pair(1);
    corio::zero_copy_sender sender(std::move(client));
    co_await expect_timeout(sender);
    // The stalling peer did get the sender's hello: the stall was its own.
    wire::hello_bytes got{};
    co_await asio::async_read(peer, asio::buffer(got), asio::use_awaitable);
    wire::hello h;
    BOOST_TEST(!wire::decode(got, wire::role::sender, h));
}

CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(a_handshake_in_time_is_untouched_by_its_deadline, 30s) {
    auto [client, server] = co_await corio::test::make_mappable_stream_pair(1);
    corio::zero_copy_sender sender(std::move(client));
    corio::zero_copy_receiver receiver(std::move(server), {2, 1024});
    sender.set_handshake_timeout(deadline);
    receiver.set_handshake_timeout(deadline);
    using namespace asio::experimental::awaitable_operators;
    co_await (sender.async_handshake(asio::use_awaitable) &&
              receiver.async_handshake(asio::use_awaitable));
    // Past the deadline, the channel still works: it was disarmed.
    asio::steady_timer timer(co_await asio::this_coro::executor, deadline * 2);
    co_await timer.async_wait(asio::use_awaitable);
    BOOST_TEST(sender.slot_count() == 2u);
}

CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(a_stall_timeout_ends_a_receive_of_half_a_notify, 30s) {
    auto [peer, server] = co_await corio::test::make_mappable_stream_pair(1);
    // The peer plays the sender's part of the handshake by hand...
    const auto hello = wire::encode({wire::role::sender, 0, 0, 0});
    co_await asio::async_write(peer, asio::buffer(hello), asio::use_awaitable);
    corio::zero_copy_receiver receiver(std::move(server), {4, 4096});
    co_await receiver.async_handshake(asio::use_awaitable);
    wire::hello_bytes got{};
    co_await asio::async_read(peer, asio::buffer(got), asio::use_awaitable);
    wire::hello h;
    BOOST_TEST(!wire::decode(got, wire::role::receiver, h));
    // ...then sends half of a valid notify and stalls.
    const auto notify = wire::encode_notify(0, 16, 0);
    co_await asio::async_write(peer, asio::buffer(notify.data(), notify.size() / 2),
                               asio::use_awaitable);
    receiver.next_layer().set_option(corio::stall_timeout(deadline));
    const auto start = clock_type::now();
    auto [ec, message] = co_await receiver.async_receive(asio::as_tuple(asio::use_awaitable));
    const auto took = clock_type::now() - start;
    BOOST_TEST((ec == asio::error::timed_out), ec.message());
    BOOST_TEST((took >= deadline - 50ms));
    BOOST_TEST((took < late), std::chrono::duration<double>(took).count() << " s");
    BOOST_TEST(peer.is_open());
}
