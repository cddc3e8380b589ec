#define BOOST_TEST_MODULE zero_copy_channel
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <corio/acceptor.hpp>
#include <corio/detail/channel_wire.hpp>
#include <corio/error.hpp>
#include <corio/socket_base.hpp>
#include <corio/stall_timeout.hpp>
#include <corio/stream.hpp>
#include <corio/zero_copy_channel.hpp>

#include "coroutine_test.hpp"
#include "primed_rsocket_services.hpp"
#include "skip_if.hpp"
#include "transport_under_test.hpp"

CORIO_TEST_PRIMED_TRANSPORT_FIXTURE();

namespace asio = boost::asio;
namespace wire = corio::detail::channel_wire;
using namespace std::chrono_literals;
using namespace asio::experimental::awaitable_operators;
using boost::system::error_code;
using corio::test::make_mappable_stream_pair;

namespace {

/// Byte i of message k.
unsigned char pattern_byte(std::uint64_t k, std::size_t i) {
    return static_cast<unsigned char>((k * 131 + i * 7 + (i >> 8)) & 0xff);
}

std::vector<unsigned char> message_bytes(std::uint64_t k, std::size_t size) {
    std::vector<unsigned char> v(size);
    for (std::size_t i = 0; i < size; ++i)
        v[i] = pattern_byte(k, i);
    return v;
}

bool holds_pattern(const corio::zero_copy_message& m, std::uint64_t k, std::size_t size) {
    if (m.size() != size)
        return false;
    const auto* p = reinterpret_cast<const unsigned char*>(m.data());
    for (std::size_t i = 0; i < size; ++i)
        if (p[i] != pattern_byte(k, i))
            return false;
    return true;
}

struct channel {
    corio::zero_copy_sender tx;
    corio::zero_copy_receiver rx;
};

asio::awaitable<channel> make_channel(corio::zero_copy_options options) {
    auto [client, server] = co_await make_mappable_stream_pair();
    corio::zero_copy_sender tx(std::move(client));
    corio::zero_copy_receiver rx(std::move(server), options);
    co_await (tx.async_handshake(asio::use_awaitable) && rx.async_handshake(asio::use_awaitable));
    co_return channel{std::move(tx), std::move(rx)};
}

asio::awaitable<void> sleep_for(std::chrono::milliseconds d) {
    asio::steady_timer timer(co_await asio::this_coro::executor, d);
    co_await timer.async_wait(asio::use_awaitable);
}

asio::awaitable<bool> wait_until(const bool& done, std::chrono::milliseconds limit = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done && std::chrono::steady_clock::now() < deadline)
        co_await sleep_for(1ms);
    co_return done;
}

/// A send started with a callback, so that the test can watch it wait.
struct pending_send {
    bool done = false;
    error_code ec;
    std::size_t bytes = 0;
};

void start_send(corio::zero_copy_sender& tx, const std::vector<unsigned char>& message,
                pending_send& p, asio::cancellation_signal* signal = nullptr) {
    auto handler = [&p](error_code ec, std::size_t n) {
        p.ec = ec;
        p.bytes = n;
        p.done = true;
    };
    if (signal)
        tx.async_send(asio::buffer(message),
                      asio::bind_cancellation_slot(signal->slot(), std::move(handler)));
    else
        tx.async_send(asio::buffer(message), std::move(handler));
}

} // namespace

CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(ten_thousand_messages_of_mixed_sizes_arrive_in_order_intact,
                                        300s) {
    constexpr std::uint32_t slot_size = 8192;
    constexpr std::uint64_t count = 10000;
    // Named, not structured bindings: clang 14 cannot capture those.
    auto ends = co_await make_channel({8, slot_size});
    auto& tx = ends.tx;
    auto& rx = ends.rx;
    BOOST_TEST(tx.slot_count() == 8u);
    BOOST_TEST(tx.slot_size() == slot_size);
    const auto size_of = [](std::uint64_t k) -> std::size_t {
        if (k % 17 == 0)
            return 0;
        if (k % 13 == 0)
            return slot_size;
        return static_cast<std::size_t>((k * 7919) % slot_size);
    };
    std::uint64_t bad = 0;
    std::size_t most_held = 0;
    auto send_all = [&]() -> asio::awaitable<void> {
        std::vector<unsigned char> buffer;
        for (std::uint64_t k = 0; k < count; ++k) {
            buffer = message_bytes(k, size_of(k));
            const auto n = co_await tx.async_send(asio::buffer(buffer), asio::use_awaitable);
            if (n != buffer.size())
                ++bad;
        }
    };
    auto receive_all = [&]() -> asio::awaitable<void> {
        // Up to 6 messages held at once (of 8 slots), released oldest first:
        // the sender keeps several slots in flight and runs out of credit too.
        std::deque<corio::zero_copy_message> held;
        for (std::uint64_t k = 0; k < count; ++k) {
            auto m = co_await rx.async_receive(asio::use_awaitable);
            if (m.sequence() != k || !holds_pattern(m, k, size_of(k)))
                ++bad;
            held.push_back(std::move(m));
            most_held = std::max(most_held, held.size());
            if (held.size() > k % 6)
                held.pop_front();
        }
    };
    co_await (send_all() && receive_all());
    BOOST_TEST(bad == 0u);
    BOOST_TEST(most_held == 6u);
}

CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(a_sender_out_of_credit_waits_and_resumes, 60s) {
    auto [tx, rx] = co_await make_channel({4, 1024});
    for (std::uint64_t k = 0; k < 4; ++k) {
        const auto m = message_bytes(k, 100);
        co_await tx.async_send(asio::buffer(m), asio::use_awaitable);
    }
    BOOST_TEST(tx.credits() == 0u);
    const auto fifth = message_bytes(4, 1024);
    pending_send p;
    start_send(tx, fifth, p);
    co_await sleep_for(100ms);
    BOOST_TEST(!p.done);
    auto first = co_await rx.async_receive(asio::use_awaitable);
    BOOST_TEST(holds_pattern(first, 0, 100));
    co_await sleep_for(50ms);
    BOOST_TEST(!p.done, "a slot still held by the application is no credit");
    first.release();
    BOOST_TEST(co_await wait_until(p.done));
    BOOST_TEST(!p.ec, p.ec.message());
    BOOST_TEST(p.bytes == 1024u);
    for (std::uint64_t k = 1; k < 5; ++k) {
        auto m = co_await rx.async_receive(asio::use_awaitable);
        BOOST_TEST(m.sequence() == k);
        BOOST_TEST(holds_pattern(m, k, k == 4 ? 1024 : 100));
    }
}

CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(a_stall_timeout_on_the_stream_ends_a_send_waiting_for_credit,
                                        60s) {
    // The receiver holds every slot and says nothing: with a stall timeout
    // on the sender's stream, the send waiting for a credit ends with
    // timed_out, as would one whose peer host is gone.
    auto [tx, rx] = co_await make_channel({2, 256});
    for (std::uint64_t k = 0; k < 2; ++k) {
        const auto m = message_bytes(k, 10);
        co_await tx.async_send(asio::buffer(m), asio::use_awaitable);
    }
    tx.next_layer().set_option(corio::stall_timeout(300ms));
    const auto stalled = message_bytes(2, 10);
    pending_send p;
    start_send(tx, stalled, p);
    co_await sleep_for(100ms);
    BOOST_TEST(!p.done);
    BOOST_TEST(co_await wait_until(p.done, 5s));
    BOOST_TEST((p.ec == asio::error::timed_out), p.ec.message());
}

CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(cancelling_a_send_waiting_for_credit_sends_nothing, 60s) {
    auto [tx, rx] = co_await make_channel({2, 256});
    for (std::uint64_t k = 0; k < 2; ++k) {
        const auto m = message_bytes(k, 10);
        co_await tx.async_send(asio::buffer(m), asio::use_awaitable);
    }
    const auto cancelled = message_bytes(99, 200);
    asio::cancellation_signal signal;
    pending_send p;
    start_send(tx, cancelled, p, &signal);
    co_await sleep_for(50ms);
    BOOST_TEST(!p.done);
    signal.emit(asio::cancellation_type::terminal);
    BOOST_TEST(co_await wait_until(p.done));
    BOOST_TEST((p.ec == asio::error::operation_aborted), p.ec.message());

    // The channel goes on, and the cancelled message never shows up.
    (co_await rx.async_receive(asio::use_awaitable)).release();
    const auto next = message_bytes(2, 50);
    co_await tx.async_send(asio::buffer(next), asio::use_awaitable);
    auto second = co_await rx.async_receive(asio::use_awaitable);
    BOOST_TEST(second.sequence() == 1u);
    BOOST_TEST(holds_pattern(second, 1, 10));
    auto third = co_await rx.async_receive(asio::use_awaitable);
    BOOST_TEST(third.sequence() == 2u);
    BOOST_TEST(holds_pattern(third, 2, 50));
}

CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(cancelling_a_waiting_receive_loses_nothing, 60s) {
    auto [tx, rx] = co_await make_channel({4, 256});
    asio::cancellation_signal signal;
    bool done = false;
    error_code ec;
    rx.async_receive(asio::bind_cancellation_slot(signal.slot(),
                                                  [&](error_code e, corio::zero_copy_message m) {
                                                      ec = e;
                                                      done = true;
                                                      BOOST_TEST(!m.holds_slot());
                                                  }));
    co_await sleep_for(50ms);
    BOOST_TEST(!done);
    signal.emit(asio::cancellation_type::terminal);
    BOOST_TEST(co_await wait_until(done));
    BOOST_TEST((ec == asio::error::operation_aborted), ec.message());

    const auto m = message_bytes(0, 256);
    co_await tx.async_send(asio::buffer(m), asio::use_awaitable);
    auto got = co_await rx.async_receive(asio::use_awaitable);
    BOOST_TEST(got.sequence() == 0u);
    BOOST_TEST(holds_pattern(got, 0, 256));
}

CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(an_orderly_shutdown_delivers_every_message_then_eof, 60s) {
    // Named, not structured bindings: clang 14 cannot capture those.
    auto ends = co_await make_channel({4, 4096});
    auto& tx = ends.tx;
    auto& rx = ends.rx;
    bool shut_down = false;
    error_code shutdown_ec;
    auto send_then_shut_down = [&]() -> asio::awaitable<void> {
        for (std::uint64_t k = 0; k < 20; ++k) {
            const auto m = message_bytes(k, 4096);
            co_await tx.async_send(asio::buffer(m), asio::use_awaitable);
        }
        std::tie(shutdown_ec) = co_await tx.async_shutdown(asio::as_tuple(asio::use_awaitable));
        shut_down = true;
    };
    std::uint64_t received = 0;
    error_code end;
    auto receive_until_end = [&]() -> asio::awaitable<void> {
        for (;;) {
            auto [ec, m] = co_await rx.async_receive(asio::as_tuple(asio::use_awaitable));
            if (ec) {
                end = ec;
                co_return;
            }
            if (m.sequence() == received && holds_pattern(m, received, 4096))
                ++received;
        }
    };
    co_await (send_then_shut_down() && receive_until_end());
    BOOST_TEST(received == 20u);
    BOOST_TEST((end == asio::error::eof), end.message());
    BOOST_TEST(shut_down);
    BOOST_TEST(!shutdown_ec, shutdown_ec.message());
    auto [ec, n] = co_await tx.async_send(asio::buffer(message_bytes(0, 1)),
                                          asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((ec == asio::error::shut_down), ec.message());
}

CORIO_COROUTINE_TEST_CASE(a_message_larger_than_a_slot_is_refused_and_the_channel_goes_on) {
    auto [tx, rx] = co_await make_channel({2, 128});
    const auto big = message_bytes(0, 129);
    auto [ec, n] = co_await tx.async_send(asio::buffer(big), asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((ec == asio::error::message_size), ec.message());
    BOOST_TEST(n == 0u);
    BOOST_TEST(tx.credits() == 2u);
    const auto fits = message_bytes(0, 128);
    co_await tx.async_send(asio::buffer(fits), asio::use_awaitable);
    auto m = co_await rx.async_receive(asio::use_awaitable);
    BOOST_TEST(holds_pattern(m, 0, 128));
}

CORIO_COROUTINE_TEST_CASE(a_message_outlives_its_receiver) {
    auto [tx, rx] = co_await make_channel({2, 64});
    const auto bytes = message_bytes(0, 64);
    co_await tx.async_send(asio::buffer(bytes), asio::use_awaitable);
    auto m = co_await rx.async_receive(asio::use_awaitable);
    {
        auto gone = std::move(rx);
    }
    BOOST_TEST(holds_pattern(m, 0, 64));
    m.release();
    BOOST_TEST(!m.holds_slot());
    // The sender sees the end, at once or with a later send.
    error_code ec;
    for (int i = 0; i < 3 && !ec; ++i)
        std::tie(ec, std::ignore) =
            co_await tx.async_send(asio::buffer(bytes), asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(!!ec);
}

CORIO_COROUTINE_TEST_CASE(closing_one_end_ends_the_others_pending_operations) {
    {
        auto [tx, rx] = co_await make_channel({2, 64});
        bool done = false;
        error_code ec;
        rx.async_receive([&](error_code e, corio::zero_copy_message) {
            ec = e;
            done = true;
        });
        tx.close();
        BOOST_TEST(co_await wait_until(done));
        BOOST_TEST(((ec == asio::error::eof) || (ec == asio::error::connection_reset)),
                   ec.message());
    }
    {
        auto [tx, rx] = co_await make_channel({1, 64});
        const auto bytes = message_bytes(0, 64);
        co_await tx.async_send(asio::buffer(bytes), asio::use_awaitable);
        pending_send p;
        start_send(tx, bytes, p);
        co_await sleep_for(20ms);
        BOOST_TEST(!p.done);
        rx.close();
        BOOST_TEST(co_await wait_until(p.done));
        BOOST_TEST(!!p.ec);
        BOOST_TEST((p.ec != asio::error::operation_aborted), p.ec.message());
    }
}

namespace {

/// Starts channel_peer in `role` against a fresh acceptor and returns its
/// pid and our end of the stream.
asio::awaitable<std::pair<pid_t, corio::stream>> start_peer(const char* role) {
    const char* program = std::getenv("CORIO_CHANNEL_PEER");
    BOOST_TEST_REQUIRE(program != nullptr, "CORIO_CHANNEL_PEER names the channel_peer program");
    auto executor = co_await asio::this_coro::executor;
    const auto transport = corio::test::transport_under_test();
    corio::acceptor acceptor(executor);
    acceptor.open(transport, corio::test::any_port_endpoint().protocol());
    acceptor.set_option(corio::socket_base::iomap_size(1));
    acceptor.bind(corio::test::any_port_endpoint());
    acceptor.listen();
    const auto where = acceptor.local_endpoint();
    const std::string name(corio::to_string(transport));
    const std::string address = where.address().to_string();
    const std::string port = std::to_string(where.port());
    // posix_spawn, not fork: ThreadSanitizer cannot follow a fork of a
    // multi-threaded process, and the child only needs to exec.
    pid_t child = -1;
    const std::string path(program), how(role);
    char* const argv[] = {const_cast<char*>(path.c_str()), const_cast<char*>(name.c_str()),
                          const_cast<char*>(address.c_str()), const_cast<char*>(port.c_str()),
                          const_cast<char*>(how.c_str()), nullptr};
    BOOST_TEST_REQUIRE(::posix_spawn(&child, program, nullptr, nullptr, argv, environ) == 0);
    auto stream = co_await acceptor.async_accept(asio::use_awaitable);
    co_return std::pair(child, std::move(stream));
}

void kill_and_reap(pid_t child) {
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
}

} // namespace

CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(a_killed_sender_ends_a_pending_receive_with_an_error, 90s) {
    auto [child, stream] = co_await start_peer("sender");
    corio::zero_copy_receiver rx(std::move(stream), {4, 4096});
    co_await rx.async_handshake(asio::use_awaitable);
    // The peer sends until its four credits are gone.
    std::vector<corio::zero_copy_message> held;
    for (std::uint64_t k = 0; k < 4; ++k) {
        held.push_back(co_await rx.async_receive(asio::use_awaitable));
        BOOST_TEST(held.back().size() == 100u);
        const auto* p = reinterpret_cast<const unsigned char*>(held.back().data());
        BOOST_TEST(p[0] == static_cast<unsigned char>(k));
        BOOST_TEST(p[99] == static_cast<unsigned char>(k + 99));
    }
    bool done = false;
    error_code ec;
    rx.async_receive([&](error_code e, corio::zero_copy_message) {
        ec = e;
        done = true;
    });
    co_await sleep_for(50ms);
    BOOST_TEST(!done);
    kill_and_reap(child);
    BOOST_TEST(co_await wait_until(done, 30s));
    BOOST_TEST(((ec == asio::error::eof) || (ec == asio::error::connection_reset)), ec.message());
    // The messages already received stay readable.
    BOOST_TEST(reinterpret_cast<const unsigned char*>(held[3].data())[5] == 8);
}

CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(a_killed_receiver_ends_a_pending_send_with_an_error, 90s) {
    auto [child, stream] = co_await start_peer("receiver");
    corio::zero_copy_sender tx(std::move(stream));
    co_await tx.async_handshake(asio::use_awaitable);
    BOOST_TEST(tx.slot_count() == 4u);
    const auto bytes = message_bytes(0, 4096);
    for (int k = 0; k < 4; ++k)
        co_await tx.async_send(asio::buffer(bytes), asio::use_awaitable);
    pending_send p;
    start_send(tx, bytes, p);
    co_await sleep_for(50ms);
    BOOST_TEST(!p.done);
    kill_and_reap(child);
    BOOST_TEST(co_await wait_until(p.done, 30s));
    BOOST_TEST(((p.ec == asio::error::eof) || (p.ec == asio::error::connection_reset)),
               p.ec.message());
}

namespace {

/// The receiver's handshake against `peer_hello` written raw by the other end.
asio::awaitable<error_code> receiver_handshake_against(const wire::hello_bytes& peer_hello) {
    auto [client, server] = co_await make_mappable_stream_pair();
    corio::zero_copy_receiver rx(std::move(server), {2, 64});
    co_await asio::async_write(client, asio::buffer(peer_hello), asio::use_awaitable);
    auto [ec] = co_await rx.async_handshake(asio::as_tuple(asio::use_awaitable));
    co_return ec;
}

} // namespace

CORIO_COROUTINE_TEST_CASE(a_handshake_with_anything_but_a_corio_sender_of_this_version_fails) {
    wire::hello_bytes junk{};
    std::fill(junk.begin(), junk.end(), std::byte{'G'});
    auto ec = co_await receiver_handshake_against(junk);
    BOOST_TEST((ec == corio::error::protocol_error), ec.message());

    auto other_version = wire::encode({wire::role::sender, 0, 0, 0});
    other_version[9] = std::byte{2};
    ec = co_await receiver_handshake_against(other_version);
    BOOST_TEST((ec == corio::error::protocol_version_mismatch), ec.message());

    // Two receivers facing each other.
    ec = co_await receiver_handshake_against(wire::encode({wire::role::receiver, 2, 64, 0}));
    BOOST_TEST((ec == corio::error::protocol_error), ec.message());

    // A sender whose peer offers an empty region.
    auto [client, server] = co_await make_mappable_stream_pair();
    corio::zero_copy_sender tx(std::move(client));
    const auto empty = wire::encode({wire::role::receiver, 0, 64, 0});
    co_await asio::async_write(server, asio::buffer(empty), asio::use_awaitable);
    auto [sec] = co_await tx.async_handshake(asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((sec == corio::error::protocol_error), sec.message());
    auto [send_ec, n] =
        co_await tx.async_send(asio::buffer(empty), asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((send_ec == corio::error::protocol_error), send_ec.message());
}

CORIO_COROUTINE_TEST_CASE(a_stream_without_iomap_size_cannot_carry_a_channel_on_tcp, *corio::test::skip_if(corio::test::tcp_only)) {
    auto [client, server] = co_await corio::test::make_stream_pair();
    corio::zero_copy_receiver rx(std::move(server), {2, 64});
    auto [ec] = co_await rx.async_handshake(asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((ec == corio::error::not_supported_by_transport), ec.message());
}

namespace {

/// A raw sender: it shakes hands by hand, then writes `notifies`; returns
/// what the receiver's receives report until the first error.
asio::awaitable<std::vector<error_code>> receive_after(const std::vector<wire::notify_bytes>& notifies) {
    auto [client, server] = co_await make_mappable_stream_pair();
    corio::zero_copy_receiver rx(std::move(server), {2, 64});
    const auto hello = wire::encode({wire::role::sender, 0, 0, 0});
    co_await asio::async_write(client, asio::buffer(hello), asio::use_awaitable);
    wire::hello_bytes theirs{};
    co_await (rx.async_handshake(asio::use_awaitable) &&
              asio::async_read(client, asio::buffer(theirs), asio::use_awaitable));
    for (const auto& n : notifies)
        co_await asio::async_write(client, asio::buffer(n), asio::use_awaitable);
    std::vector<error_code> results;
    std::vector<corio::zero_copy_message> held;
    for (;;) {
        auto [ec, m] = co_await rx.async_receive(asio::as_tuple(asio::use_awaitable));
        results.push_back(ec);
        if (ec)
            break;
        held.push_back(std::move(m));
    }
    co_return results;
}

} // namespace

CORIO_COROUTINE_TEST_CASE(a_notify_that_breaks_the_protocol_ends_the_channel) {
    const error_code protocol_error = corio::error::protocol_error;
    const auto expect = [&](const std::vector<error_code>& r, std::size_t good) {
        BOOST_TEST_REQUIRE(r.size() == good + 1);
        for (std::size_t i = 0; i < good; ++i)
            BOOST_TEST(!r[i]);
        BOOST_TEST((r.back() == protocol_error), r.back().message());
    };
    // g++ 12 cannot build an initializer list of arrays inside a coroutine,
    // so the cases are made first.
    using notifies = std::vector<wire::notify_bytes>;
    auto bad_type = wire::encode_notify(0, 10, 0);
    bad_type[0] = std::byte{7};
    auto reserved = wire::encode_notify(0, 10, 0);
    reserved[13] = std::byte{1};
    std::vector<std::pair<notifies, std::size_t>> cases;
    cases.push_back({notifies(1, wire::encode_notify(2, 10, 0)), 0}); // no such slot
    cases.push_back({notifies(1, wire::encode_notify(0, 65, 0)), 0}); // longer than a slot
    cases.push_back({notifies(1, wire::encode_notify(0, 10, 1)), 0}); // out of sequence
    cases.push_back({notifies(1, bad_type), 0});
    cases.push_back({notifies(1, reserved), 0});
    // A slot the application still holds.
    notifies twice(1, wire::encode_notify(0, 10, 0));
    twice.push_back(wire::encode_notify(0, 10, 1));
    cases.push_back({twice, 1});
    for (const auto& [wire_notifies, good] : cases)
        expect(co_await receive_after(wire_notifies), good);
}
