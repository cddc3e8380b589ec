#define BOOST_TEST_MODULE stream
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <array>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <corio/acceptor.hpp>
#include <corio/error.hpp>
#include <corio/iomap_registration.hpp>
#include <corio/rpoll_service.hpp>
#include <corio/stream.hpp>

#include "coroutine_test.hpp"
#include "primed_rsocket_services.hpp"
#include "transport_under_test.hpp"

CORIO_TEST_PRIMED_TRANSPORT_FIXTURE();

namespace asio = boost::asio;
using namespace std::chrono_literals;
using namespace asio::experimental::awaitable_operators;
using boost::system::error_code;
using corio::test::make_stream_pair;

namespace {

std::vector<unsigned char> pattern(std::size_t n, unsigned seed) {
    std::vector<unsigned char> v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = static_cast<unsigned char>((i * 131 + seed) >> 3);
    return v;
}

asio::awaitable<void> sleep_for(std::chrono::milliseconds d) {
    asio::steady_timer timer(co_await asio::this_coro::executor, d);
    co_await timer.async_wait(asio::use_awaitable);
}

/// Runs the context's other work until `done` or the limit.
asio::awaitable<bool> wait_until(const bool& done, std::chrono::milliseconds limit = 5s) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done && std::chrono::steady_clock::now() < deadline)
        co_await sleep_for(1ms);
    co_return done;
}

/// Starts writes until one stays pending: the peer reads nothing, so the
/// send buffers fill. Returns the result slot of the pending write.
struct pending_write {
    bool done = false;
    error_code ec;
    std::size_t bytes = 0;
};

asio::awaitable<void> fill_until_pending(corio::stream& s, const std::vector<unsigned char>& block,
                                         pending_write& result,
                                         asio::cancellation_slot slot = {}) {
    for (int i = 0; i < 10000; ++i) {
        result = {};
        s.async_write_some(asio::buffer(block),
                           asio::bind_cancellation_slot(slot, [&](error_code ec, std::size_t n) {
                               result.ec = ec;
                               result.bytes = n;
                               result.done = true;
                           }));
        co_await wait_until(result.done, 50ms);
        if (!result.done)
            co_return;
        BOOST_TEST_REQUIRE(!result.ec, result.ec.message());
    }
    BOOST_FAIL("the send buffers never filled");
}

} // namespace

CORIO_COROUTINE_TEST_CASE(connect_then_transfer_a_verified_pattern_both_ways) {
    auto [client, server] = co_await make_stream_pair();
    BOOST_TEST(client.is_open());
    BOOST_TEST(server.is_open());
    BOOST_TEST((client.transport() == corio::test::transport_under_test()));
    BOOST_TEST(client.native_handle() >= 0);
    BOOST_TEST((client.remote_endpoint() == server.local_endpoint()));
    BOOST_TEST((client.local_endpoint() == server.remote_endpoint()));

    const auto up = pattern(1 << 20, 1);
    std::vector<unsigned char> got(up.size());
    co_await (asio::async_write(client, asio::buffer(up), asio::use_awaitable) &&
              asio::async_read(server, asio::buffer(got), asio::use_awaitable));
    BOOST_TEST((got == up));

    const auto down = pattern(777, 5);
    std::vector<unsigned char> back(down.size());
    co_await asio::async_write(server, asio::buffer(down), asio::use_awaitable);
    co_await asio::async_read(client, asio::buffer(back), asio::use_awaitable);
    BOOST_TEST((back == down));
}

CORIO_COROUTINE_TEST_CASE(gather_writes_and_scatter_reads) {
    auto [client, server] = co_await make_stream_pair();
    const std::string a = "scatter", b = "/", c = "gather";
    const std::array<asio::const_buffer, 3> out{asio::buffer(a), asio::buffer(b), asio::buffer(c)};
    co_await asio::async_write(client, out, asio::use_awaitable);
    std::array<char, 4> x{};
    std::array<char, 10> y{};
    const std::array<asio::mutable_buffer, 2> in{asio::buffer(x), asio::buffer(y)};
    const auto n = co_await asio::async_read(server, in, asio::use_awaitable);
    BOOST_TEST(n == 14u);
    BOOST_TEST(std::string(x.data(), 4) + std::string(y.data(), 10) == "scatter/gather");
}

CORIO_COROUTINE_TEST_CASE(empty_buffers_complete_at_once) {
    auto [client, server] = co_await make_stream_pair();
    BOOST_TEST(co_await server.async_read_some(asio::mutable_buffer(), asio::use_awaitable) == 0u);
    BOOST_TEST(co_await client.async_write_some(asio::const_buffer(), asio::use_awaitable) == 0u);
}

CORIO_COROUTINE_TEST_CASE(read_until_works_unchanged) {
    auto [client, server] = co_await make_stream_pair();
    const std::string lines = "first line\nsecond line\n";
    co_await asio::async_write(client, asio::buffer(lines), asio::use_awaitable);
    std::string buffer;
    auto n = co_await asio::async_read_until(server, asio::dynamic_buffer(buffer), '\n',
                                             asio::use_awaitable);
    BOOST_TEST(buffer.substr(0, n) == "first line\n");
    buffer.erase(0, n);
    n = co_await asio::async_read_until(server, asio::dynamic_buffer(buffer), '\n',
                                        asio::use_awaitable);
    BOOST_TEST(buffer.substr(0, n) == "second line\n");
}

CORIO_COROUTINE_TEST_CASE(peer_shutdown_reads_as_eof) {
    auto [client, server] = co_await make_stream_pair();
    co_await asio::async_write(client, asio::buffer("bye", 3), asio::use_awaitable);
    client.shutdown(corio::stream::shutdown_send);
    std::array<char, 3> got{};
    co_await asio::async_read(server, asio::buffer(got), asio::use_awaitable);
    std::array<char, 8> more{};
    auto [ec, n] = co_await server.async_read_some(asio::buffer(more),
                                                   asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((ec == asio::error::eof), ec.message());
    BOOST_TEST(n == 0u);
}

CORIO_COROUTINE_TEST_CASE(every_completion_token) {
    auto [client, server] = co_await make_stream_pair();
    auto executor = co_await asio::this_coro::executor;
    std::array<char, 16> buf{};

    // A plain callback.
    bool called = false;
    client.async_write_some(asio::buffer("cb", 2), [&](error_code ec, std::size_t n) {
        BOOST_TEST(!ec);
        BOOST_TEST(n == 2u);
        called = true;
    });
    BOOST_TEST(co_await wait_until(called));
    co_await asio::async_read(server, asio::buffer(buf, 2), asio::use_awaitable);
    BOOST_TEST(std::string(buf.data(), 2) == "cb");

    // deferred: nothing starts until the deferred operation is awaited. A
    // write made in between reaches the peer first, which it could not if
    // the deferred write had been sent when it was made.
    auto deferred_write = client.async_write_some(asio::buffer("df", 2), asio::deferred);
    co_await sleep_for(5ms);
    co_await asio::async_write(client, asio::buffer("nw", 2), asio::use_awaitable);
    BOOST_TEST(co_await std::move(deferred_write)(asio::use_awaitable) == 2u);
    co_await asio::async_read(server, asio::buffer(buf, 4), asio::use_awaitable);
    BOOST_TEST(std::string(buf.data(), 4) == "nwdf");

    // as_tuple
    auto [ec, n] = co_await client.async_write_some(asio::buffer("at", 2),
                                                    asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(!ec);
    BOOST_TEST(n == 2u);
    co_await asio::async_read(server, asio::buffer(buf, 2), asio::use_awaitable);

    // bind_executor with a strand: the handler runs inside the strand.
    auto strand = asio::make_strand(executor);
    bool in_strand = false;
    called = false;
    client.async_write_some(asio::buffer("st", 2),
                            asio::bind_executor(strand, [&](error_code, std::size_t) {
                                in_strand = strand.running_in_this_thread();
                                called = true;
                            }));
    BOOST_TEST(co_await wait_until(called));
    BOOST_TEST(in_strand);
    co_await asio::async_read(server, asio::buffer(buf, 2), asio::use_awaitable);
}

CORIO_COROUTINE_TEST_CASE(a_plain_callback_never_runs_inside_the_initiating_call) {
    auto [client, server] = co_await make_stream_pair();
    // On a ready socket the first nonblocking try succeeds inside the
    // initiating call; its handler must still wait for the executor, as
    // Asio's rule says, or a caller holding a lock around the call deadlocks.
    bool wrote = false;
    error_code write_ec;
    client.async_write_some(asio::buffer("ab", 2), [&](error_code ec, std::size_t) {
        write_ec = ec;
        wrote = true;
    });
    BOOST_TEST(!wrote);
    BOOST_TEST_REQUIRE(co_await wait_until(wrote));
    BOOST_TEST(!write_ec, write_ec.message());

    // Both bytes went in one send, so once the first is read the second is
    // already waiting: the next read finds its socket ready.
    std::array<char, 1> first{};
    co_await asio::async_read(server, asio::buffer(first), asio::use_awaitable);
    bool read = false;
    std::array<char, 8> rest{};
    std::size_t got = 0;
    server.async_read_some(asio::buffer(rest), [&](error_code, std::size_t n) {
        got = n;
        read = true;
    });
    BOOST_TEST(!read);
    BOOST_TEST_REQUIRE(co_await wait_until(read));
    BOOST_TEST_REQUIRE(got == 1u);
    BOOST_TEST(first[0] == 'a');
    BOOST_TEST(rest[0] == 'b');
}

BOOST_AUTO_TEST_CASE(use_future_with_the_context_on_another_thread) {
    asio::io_context context;
    corio::set_poll_mode(context, corio::test::poll_mode_under_test());
    auto work = asio::make_work_guard(context);
    std::thread runner([&] { context.run(); });
    std::pair<corio::stream, corio::stream> pair{corio::stream(context), corio::stream(context)};
    auto made = asio::co_spawn(
        context, [&]() -> asio::awaitable<void> { pair = co_await make_stream_pair(); },
        asio::use_future);
    BOOST_TEST_REQUIRE((made.wait_for(10s) == std::future_status::ready));
    made.get();

    auto written = pair.first.async_write_some(asio::buffer("future", 6), asio::use_future);
    BOOST_TEST_REQUIRE((written.wait_for(10s) == std::future_status::ready));
    BOOST_TEST(written.get() == 6u);
    std::array<char, 6> buf{};
    auto read = asio::async_read(pair.second, asio::buffer(buf), asio::use_future);
    BOOST_TEST_REQUIRE((read.wait_for(10s) == std::future_status::ready));
    BOOST_TEST(read.get() == 6u);
    BOOST_TEST(std::string(buf.data(), 6) == "future");

    // An error arrives as the future's exception.
    pair.second.close();
    auto failed = pair.second.async_read_some(asio::buffer(buf), asio::use_future);
    BOOST_TEST_REQUIRE((failed.wait_for(10s) == std::future_status::ready));
    BOOST_CHECK_THROW(failed.get(), boost::system::system_error);

    asio::post(context, [&] { pair = {corio::stream(context), corio::stream(context)}; });
    work.reset();
    runner.join();
}

CORIO_COROUTINE_TEST_CASE(cancelling_a_pending_read_each_way) {
    auto [client, server] = co_await make_stream_pair();
    for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                      asio::cancellation_type::total}) {
        asio::cancellation_signal signal;
        std::array<char, 8> buf{};
        bool done = false;
        error_code result;
        server.async_read_some(asio::buffer(buf),
                               asio::bind_cancellation_slot(signal.slot(),
                                                            [&](error_code ec, std::size_t) {
                                                                result = ec;
                                                                done = true;
                                                            }));
        co_await sleep_for(20ms);
        BOOST_TEST(!done);
        signal.emit(type);
        BOOST_TEST(co_await wait_until(done));
        BOOST_TEST((result == asio::error::operation_aborted), result.message());
    }
    // The stream still works after cancelled reads.
    co_await asio::async_write(client, asio::buffer("ok", 2), asio::use_awaitable);
    std::array<char, 2> buf{};
    co_await asio::async_read(server, asio::buffer(buf), asio::use_awaitable);
    BOOST_TEST(std::string(buf.data(), 2) == "ok");
}

CORIO_COROUTINE_TEST_CASE(cancelling_a_pending_write_reports_what_it_wrote) {
    auto [client, server] = co_await make_stream_pair();
    const auto block = pattern(256 * 1024, 3);
    asio::cancellation_signal signal;
    pending_write pending;
    co_await fill_until_pending(client, block, pending, signal.slot());
    signal.emit(asio::cancellation_type::terminal);
    BOOST_TEST(co_await wait_until(pending.done));
    // Either it had moved nothing and was aborted, or it had moved bytes
    // and reports them: never an abort that hides written bytes.
    BOOST_TEST(((pending.ec == asio::error::operation_aborted && pending.bytes == 0) ||
                (!pending.ec && pending.bytes > 0)),
               pending.ec.message() << " after " << pending.bytes << " bytes");
}

CORIO_COROUTINE_TEST_CASE(a_timeout_with_the_or_operator) {
    auto [client, server] = co_await make_stream_pair();
    auto executor = co_await asio::this_coro::executor;
    std::array<char, 8> buf{};
    asio::steady_timer timer(executor, 30ms);
    auto result = co_await (server.async_read_some(asio::buffer(buf), asio::use_awaitable) ||
                            timer.async_wait(asio::use_awaitable));
    BOOST_TEST(result.index() == 1u);
    // The timed-out read left the stream usable.
    co_await asio::async_write(client, asio::buffer("late", 4), asio::use_awaitable);
    timer.expires_after(10s);
    result = co_await (server.async_read_some(asio::buffer(buf), asio::use_awaitable) ||
                       timer.async_wait(asio::use_awaitable));
    BOOST_TEST_REQUIRE(result.index() == 0u);
    BOOST_TEST(std::get<0>(result) >= 1u);
}

CORIO_COROUTINE_TEST_CASE(cancel_and_close_end_every_pending_operation) {
    auto [client, server] = co_await make_stream_pair();
    std::array<char, 8> buf{};
    int completed = 0;
    std::vector<error_code> results;
    auto record = [&](error_code ec, std::size_t) {
        results.push_back(ec);
        ++completed;
    };
    server.async_read_some(asio::buffer(buf), record);
    server.async_read_some(asio::buffer(buf), record);
    co_await sleep_for(10ms);
    server.cancel();
    for (int i = 0; i < 1000 && completed < 2; ++i)
        co_await sleep_for(1ms);
    BOOST_TEST(completed == 2);
    BOOST_TEST(server.is_open());

    pending_write pending;
    const auto block = pattern(256 * 1024, 4);
    co_await fill_until_pending(client, block, pending);
    client.async_read_some(asio::buffer(buf), record);
    client.close();
    BOOST_TEST(!client.is_open());
    BOOST_TEST(co_await wait_until(pending.done));
    for (int i = 0; i < 100 && completed < 3; ++i)
        co_await sleep_for(1ms);
    BOOST_TEST(completed == 3);
    for (const auto& ec : results)
        BOOST_TEST((ec == asio::error::operation_aborted), ec.message());
    BOOST_TEST(((pending.ec == asio::error::operation_aborted) || pending.bytes > 0));
}

CORIO_COROUTINE_TEST_CASE(calls_on_a_closed_stream_give_bad_descriptor) {
    auto executor = co_await asio::this_coro::executor;
    corio::stream never_opened(executor, corio::test::transport_under_test());
    std::array<char, 4> buf{};
    auto [ec, n] = co_await never_opened.async_read_some(asio::buffer(buf),
                                                         asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((ec == asio::error::bad_descriptor), ec.message());
    std::tie(ec, n) = co_await never_opened.async_write_some(asio::buffer(buf),
                                                             asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((ec == asio::error::bad_descriptor), ec.message());
    never_opened.read_some(asio::buffer(buf), ec);
    BOOST_TEST((ec == asio::error::bad_descriptor), ec.message());
    never_opened.remote_endpoint(ec);
    BOOST_TEST((ec == asio::error::bad_descriptor), ec.message());
    never_opened.shutdown(corio::stream::shutdown_both, ec);
    BOOST_TEST((ec == asio::error::bad_descriptor), ec.message());
    BOOST_CHECK_THROW(never_opened.cancel(), boost::system::system_error);
    BOOST_TEST(never_opened.native_handle() == -1);

    auto [client, server] = co_await make_stream_pair();
    corio::stream moved_to = std::move(client);
    BOOST_TEST(moved_to.is_open());
    BOOST_TEST(!client.is_open());
    std::tie(ec, n) = co_await client.async_read_some(asio::buffer(buf),
                                                      asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((ec == asio::error::bad_descriptor), ec.message());
}

CORIO_COROUTINE_TEST_CASE(connecting_where_nothing_listens_is_refused) {
    auto executor = co_await asio::this_coro::executor;
    // A port bound but never listened on. A port whose listener was just
    // closed would not do on rsockets: the listener's rclose runs in the
    // background, and until it has, librdmacm's listen service still takes
    // connections there (doc/architecture.md, "Closing a listener").
    boost::asio::ip::tcp::endpoint closed;
    {
        corio::acceptor probe(executor);
        probe.open(corio::test::transport_under_test(), corio::test::any_port_endpoint().protocol());
        probe.bind(corio::test::any_port_endpoint());
        closed = probe.local_endpoint();
    }
    corio::stream s(executor, corio::test::transport_under_test());
    auto [ec] = co_await s.async_connect(closed, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((ec == asio::error::connection_refused), ec.message());
}

CORIO_COROUTINE_TEST_CASE(blocking_read_and_write_some) {
    auto [client, server] = co_await make_stream_pair();
    BOOST_TEST(client.write_some(asio::buffer("sync", 4)) == 4u);
    std::array<char, 4> buf{};
    std::size_t got = 0;
    while (got < 4)
        got += server.read_some(asio::buffer(buf.data() + got, 4 - got));
    BOOST_TEST(std::string(buf.data(), 4) == "sync");
}

CORIO_COROUTINE_TEST_CASE(accepting_into_a_given_stream) {
    auto executor = co_await asio::this_coro::executor;
    corio::acceptor acceptor(executor, corio::test::any_port_endpoint(),
                             corio::test::transport_under_test());
    corio::stream client(executor, corio::test::transport_under_test());
    corio::stream server(executor);
    co_await (acceptor.async_accept(server, asio::use_awaitable) &&
              client.async_connect(acceptor.local_endpoint(), asio::use_awaitable));
    BOOST_TEST(server.is_open());
    co_await asio::async_write(server, asio::buffer("in", 2), asio::use_awaitable);
    std::array<char, 2> buf{};
    co_await asio::async_read(client, asio::buffer(buf), asio::use_awaitable);
    BOOST_TEST(std::string(buf.data(), 2) == "in");

    // Into a stream that is already open: already_open, and nothing accepted.
    auto [ec] = co_await acceptor.async_accept(server, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((ec == asio::error::already_open), ec.message());
}

CORIO_COROUTINE_TEST_CASE(cancelling_a_pending_accept) {
    auto executor = co_await asio::this_coro::executor;
    corio::acceptor acceptor(executor, corio::test::any_port_endpoint(),
                             corio::test::transport_under_test());
    asio::cancellation_signal signal;
    bool done = false;
    error_code result;
    acceptor.async_accept(asio::bind_cancellation_slot(signal.slot(),
                                                       [&](error_code ec, corio::stream) {
                                                           result = ec;
                                                           done = true;
                                                       }));
    co_await sleep_for(20ms);
    BOOST_TEST(!done);
    signal.emit(asio::cancellation_type::terminal);
    BOOST_TEST(co_await wait_until(done));
    BOOST_TEST((result == asio::error::operation_aborted), result.message());

    // close() ends a pending accept too.
    done = false;
    acceptor.async_accept([&](error_code ec, corio::stream) {
        result = ec;
        done = true;
    });
    co_await sleep_for(10ms);
    acceptor.close();
    BOOST_TEST(co_await wait_until(done));
    BOOST_TEST((result == asio::error::operation_aborted), result.message());
}

CORIO_COROUTINE_TEST_CASE(cancelling_a_pending_connect) {
    auto executor = co_await asio::this_coro::executor;
    asio::cancellation_signal signal;
    bool done = false;
    error_code result;
    auto record = asio::bind_cancellation_slot(signal.slot(), [&](error_code ec) {
        result = ec;
        done = true;
    });
    corio::stream s(executor, corio::test::transport_under_test());
    std::vector<corio::stream> fillers;
    if (corio::test::transport_under_test() == corio::transport::rsocket) {
        // rsockets complete a connect before the peer's raccept, so pend on
        // address resolution instead: the next address on the guest's own
        // RDMA subnet, where no host answers (the guest has no network
        // device, so nothing leaves it).
        const auto own = corio::test::address_under_test();
        asio::ip::address next;
        if (own.is_v6()) {
            auto bytes = own.to_v6().to_bytes();
            bytes[15] = static_cast<unsigned char>(bytes[15] + 1);
            next = asio::ip::address_v6(bytes);
        } else {
            auto bytes = own.to_v4().to_bytes();
            bytes[3] = static_cast<unsigned char>(bytes[3] + 1);
            next = asio::ip::address_v4(bytes);
        }
        s.async_connect({next, 7471}, record);
        co_await wait_until(done, 200ms);
    } else {
        // A listener that never accepts, with its backlog full, leaves later
        // connects pending: the kernel drops their SYNs.
        corio::acceptor acceptor(executor);
        acceptor.open(corio::transport::tcp, corio::test::any_port_endpoint().protocol());
        acceptor.bind(corio::test::any_port_endpoint());
        acceptor.listen(0);
        for (int i = 0; i < 64; ++i) {
            done = false;
            s = corio::stream(executor, corio::transport::tcp);
            s.async_connect(acceptor.local_endpoint(), record);
            co_await wait_until(done, 200ms);
            if (!done)
                break;
            fillers.push_back(std::move(s));
        }
    }
    BOOST_TEST_REQUIRE(!done, "every connect completed at once");
    signal.emit(asio::cancellation_type::terminal);
    BOOST_TEST(co_await wait_until(done));
    BOOST_TEST((result == asio::error::operation_aborted), result.message());
}

CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(a_killed_peer_ends_pending_operations_with_errors, 60s) {
    // The peer is a process of its own, killed with SIGKILL: what a crashed
    // or OOM-killed peer looks like, with no chance to close anything.
    const char* peer_program = std::getenv("CORIO_STREAM_PEER");
    BOOST_TEST_REQUIRE(peer_program != nullptr, "CORIO_STREAM_PEER names the stream_peer program");
    auto executor = co_await asio::this_coro::executor;
    corio::acceptor acceptor(executor, corio::test::any_port_endpoint(),
                             corio::test::transport_under_test());
    const auto where = acceptor.local_endpoint();
    const std::string transport(corio::to_string(corio::test::transport_under_test()));
    const std::string address = where.address().to_string();
    const std::string port = std::to_string(where.port());

    // posix_spawn, not fork: fork in a multi-threaded process is what
    // ThreadSanitizer cannot follow, and the child only needs to exec.
    pid_t child = -1;
    const std::string program(peer_program);
    char* const argv[] = {const_cast<char*>(program.c_str()), const_cast<char*>(transport.c_str()),
                          const_cast<char*>(address.c_str()), const_cast<char*>(port.c_str()),
                          nullptr};
    BOOST_TEST_REQUIRE(::posix_spawn(&child, peer_program, nullptr, nullptr, argv, environ) == 0);
    auto server = co_await acceptor.async_accept(asio::use_awaitable);
    std::array<char, 5> ready{};
    co_await asio::async_read(server, asio::buffer(ready), asio::use_awaitable);
    BOOST_TEST(std::string(ready.data(), 5) == "ready");

    // A pending read, and a pending write behind full send buffers.
    bool read_done = false;
    error_code read_ec;
    std::array<char, 64> buf{};
    server.async_read_some(asio::buffer(buf), [&](error_code ec, std::size_t) {
        read_ec = ec;
        read_done = true;
    });
    pending_write write;
    const auto block = pattern(256 * 1024, 6);
    co_await fill_until_pending(server, block, write);
    BOOST_TEST(!read_done);

    const auto killed_at = std::chrono::steady_clock::now();
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    BOOST_TEST(co_await wait_until(read_done, 30s));
    const auto read_after = std::chrono::steady_clock::now() - killed_at;
    // A write stays pending until the transport notices the peer is gone;
    // another write then fails for certain.
    BOOST_TEST(co_await wait_until(write.done, 30s));
    error_code next_write_ec;
    for (int i = 0; i < 100 && !next_write_ec; ++i) {
        auto [ec, n] = co_await server.async_write_some(asio::buffer(block),
                                                        asio::as_tuple(asio::use_awaitable));
        next_write_ec = ec;
    }
    const auto write_after = std::chrono::steady_clock::now() - killed_at;
    BOOST_TEST(((read_ec == asio::error::eof) || (read_ec == asio::error::connection_reset)),
               read_ec.message());
    BOOST_TEST(!!next_write_ec);
    BOOST_TEST_MESSAGE("peer killed: pending read ended after "
                       << std::chrono::duration_cast<std::chrono::milliseconds>(read_after).count()
                       << " ms (" << read_ec.message() << "), writes failed after "
                       << std::chrono::duration_cast<std::chrono::milliseconds>(write_after).count()
                       << " ms (" << next_write_ec.message() << ")");
}

namespace {

// Boost.Test's assertions are not thread-safe: code that runs on the
// io_context's threads reports failures by throwing, and the test thread
// asserts on what was collected.
void require(bool condition, const std::string& what) {
    if (!condition)
        throw std::runtime_error(what);
}

/// Echoes until the peer shuts down its sending side.
asio::awaitable<void> echo(corio::stream s) {
    std::array<unsigned char, 4096> buf;
    for (;;) {
        auto [ec, n] = co_await s.async_read_some(asio::buffer(buf), asio::as_tuple(asio::use_awaitable));
        if (ec == asio::error::eof)
            break;
        require(!ec, "echo read: " + ec.message());
        co_await asio::async_write(s, asio::buffer(buf.data(), n), asio::use_awaitable);
    }
    s.shutdown(corio::stream::shutdown_send);
}

/// Sends a pattern through an echo and checks every byte that comes back.
asio::awaitable<void> echo_client(corio::stream s, unsigned seed, std::size_t bytes, int& verified) {
    const auto sent = pattern(bytes, seed);
    std::vector<unsigned char> back(bytes);
    co_await (asio::async_write(s, asio::buffer(sent), asio::use_awaitable) &&
              asio::async_read(s, asio::buffer(back), asio::use_awaitable));
    require(back == sent, "echo " + std::to_string(seed) + " came back changed");
    ++verified;
}

/// Raises the soft limit on open descriptors to what `streams` streams with
/// both ends in this process need. An rsocket holds two (its rdma_cm event
/// channel and its completion channel): 256 streams need over 1024, the
/// usual soft limit, and past it rsocket's listen thread cannot create the
/// accepted socket and rejects the connection (the client sees
/// connection_refused).
void allow_descriptors_for(int streams) {
    const bool rsockets = corio::test::transport_under_test() == corio::transport::rsocket;
    const auto needed = static_cast<rlim_t>(streams * (rsockets ? 4 : 2) + 64);
    rlimit limit{};
    BOOST_TEST_REQUIRE(::getrlimit(RLIMIT_NOFILE, &limit) == 0);
    if (limit.rlim_cur < needed) {
        limit.rlim_cur = std::min(needed, limit.rlim_max);
        BOOST_TEST_REQUIRE(::setrlimit(RLIMIT_NOFILE, &limit) == 0);
    }
    BOOST_TEST_REQUIRE(limit.rlim_cur >= needed,
                       streams << " streams need " << needed << " descriptors; the hard limit is "
                               << limit.rlim_max);
}

/// `streams` connections, each echoing `bytes` through its own coroutines on
/// its own strand, on an io_context run by `threads` threads.
void run_concurrent_echoes(int streams, int threads, std::size_t bytes) {
    allow_descriptors_for(streams);
    asio::io_context context(threads);
    corio::set_poll_mode(context, corio::test::poll_mode_under_test());
    corio::acceptor acceptor(context, corio::test::any_port_endpoint(),
                             corio::test::transport_under_test());
    const auto where = acceptor.local_endpoint();
    std::vector<int> verified(static_cast<std::size_t>(streams), 0);
    std::atomic<int> connected = 0;
    std::atomic<int> accepted = 0;
    std::mutex failure_mutex;
    std::exception_ptr failure;
    // One failed stream stops the run: the accept loop would otherwise wait
    // for a connection that never comes, and the test would hang, not fail.
    auto note = [&](std::exception_ptr e) {
        std::lock_guard lock(failure_mutex);
        if (e && !failure) {
            failure = e;
            context.stop();
        }
    };
    asio::co_spawn(
        context,
        [&]() -> asio::awaitable<void> {
            for (int i = 0; i < streams; ++i) {
                auto strand = asio::make_strand(context);
                corio::stream peer(strand);
                auto [ec] = co_await acceptor.async_accept(peer, asio::as_tuple(asio::use_awaitable));
                require(!ec, "accept " + std::to_string(i) + ": " + ec.message());
                ++accepted;
                asio::co_spawn(strand, echo(std::move(peer)), note);
            }
        },
        note);
    for (int i = 0; i < streams; ++i) {
        auto strand = asio::make_strand(context);
        asio::co_spawn(
            strand,
            [&, i, strand]() -> asio::awaitable<void> {
                corio::stream s(strand, corio::test::transport_under_test());
                auto [ec] = co_await s.async_connect(where, asio::as_tuple(asio::use_awaitable));
                require(!ec, "connect " + std::to_string(i) + ": " + ec.message());
                ++connected;
                co_await echo_client(std::move(s), static_cast<unsigned>(i), bytes,
                                     verified[static_cast<std::size_t>(i)]);
            },
            note);
    }
    const auto start = std::chrono::steady_clock::now();
    std::atomic<bool> finished = false;
    std::thread progress;
    if (std::getenv("CORIO_TEST_PROGRESS"))
        progress = std::thread([&] {
            while (!finished) {
                std::this_thread::sleep_for(5s);
                std::fprintf(stderr, "%lld s: connected %d accepted %d\n",
                             static_cast<long long>((std::chrono::steady_clock::now() - start) / 1s),
                             connected.load(), accepted.load());
            }
        });
    std::vector<std::thread> runners;
    for (int t = 1; t < threads; ++t)
        runners.emplace_back([&] { context.run(); });
    context.run();
    for (auto& r : runners)
        r.join();
    finished = true;
    if (progress.joinable())
        progress.join();
    BOOST_TEST_MESSAGE(streams << " streams on " << threads << " thread(s): "
                               << std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::steady_clock::now() - start)
                                      .count()
                               << " ms");
    if (failure)
        std::rethrow_exception(failure);
    BOOST_TEST(std::count(verified.begin(), verified.end(), 1) == streams);
}

} // namespace

/// 256, or CORIO_TEST_STREAMS (to measure how the time grows with the count).
int concurrent_streams() {
    const char* n = std::getenv("CORIO_TEST_STREAMS");
    return n ? std::atoi(n) : 256;
}

BOOST_AUTO_TEST_CASE(many_concurrent_streams_echo_verified_data_on_one_thread) {
    run_concurrent_echoes(concurrent_streams(), 1, 64 * 1024);
}

BOOST_AUTO_TEST_CASE(many_concurrent_streams_echo_verified_data_on_two_threads) {
    run_concurrent_echoes(concurrent_streams(), 2, 64 * 1024);
}

CORIO_COROUTINE_TEST_CASE(beast_http_over_a_corio_stream) {
    namespace http = boost::beast::http;
    auto [client, server] = co_await make_stream_pair();

    http::request<http::string_body> request{http::verb::post, "/echo", 11};
    request.set(http::field::host, "corio.test");
    request.body() = std::string(10000, 'x') + "end";
    request.prepare_payload();
    co_await http::async_write(client, request, asio::use_awaitable);

    boost::beast::flat_buffer server_buffer;
    http::request<http::string_body> received;
    co_await http::async_read(server, server_buffer, received, asio::use_awaitable);
    BOOST_TEST(received.target() == "/echo");
    BOOST_TEST(received.body() == request.body());

    http::response<http::string_body> response{http::status::ok, 11};
    response.body() = received.body().substr(received.body().size() - 3);
    response.prepare_payload();
    co_await http::async_write(server, response, asio::use_awaitable);

    boost::beast::flat_buffer client_buffer;
    http::response<http::string_body> answer;
    co_await http::async_read(client, client_buffer, answer, asio::use_awaitable);
    BOOST_TEST(answer.result_int() == 200u);
    BOOST_TEST(answer.body() == "end");
}

BOOST_AUTO_TEST_CASE(destroying_the_context_destroys_pending_handlers_unrun) {
    // Asio's rule for services: at shutdown, pending handlers are destroyed,
    // never invoked. A coroutine frame waiting in a read is such a handler;
    // destroying it destroys its streams, which call back into the service.
    auto alive = std::make_shared<int>(0);
    std::weak_ptr<int> frame_alive = alive;
    bool resumed = false;
    {
        asio::io_context context;
        corio::set_poll_mode(context, corio::test::poll_mode_under_test());
        asio::co_spawn(
            context,
            [alive = std::move(alive), &resumed]() -> asio::awaitable<void> {
                auto [client, server] = co_await make_stream_pair();
                std::array<char, 8> buf{};
                [[maybe_unused]] auto both = co_await (server.async_read_some(asio::buffer(buf), asio::use_awaitable) &&
                                      client.async_read_some(asio::buffer(buf), asio::use_awaitable));
                resumed = true;
            },
            asio::detached);
        context.run_for(200ms);
        BOOST_TEST(!frame_alive.expired());
    }
    BOOST_TEST(!resumed);
    BOOST_TEST(frame_alive.expired());
}

// Message calls with flags (basic_stream's send/receive block).

CORIO_COROUTINE_TEST_CASE(peek_leaves_the_bytes_for_the_next_receive) {
    auto [client, server] = co_await make_stream_pair();
    co_await asio::async_write(client, asio::buffer("peekaboo", 8), asio::use_awaitable);
    std::array<char, 8> peeked{};
    const auto n = co_await server.async_receive(asio::buffer(peeked),
                                                 asio::socket_base::message_peek,
                                                 asio::use_awaitable);
    BOOST_TEST_REQUIRE(n >= 1u);
    BOOST_TEST(std::string(peeked.data(), n) == std::string("peekaboo").substr(0, n));
    // Peeked again, blocking: the same first bytes.
    std::array<char, 8> again{};
    const auto m = server.receive(asio::buffer(again), asio::socket_base::message_peek);
    BOOST_TEST_REQUIRE(m >= 1u);
    BOOST_TEST(std::string(again.data(), m) == std::string("peekaboo").substr(0, m));
    std::array<char, 8> read{};
    co_await asio::async_read(server, asio::buffer(read), asio::use_awaitable);
    BOOST_TEST(std::string(read.data(), 8) == "peekaboo");
}

CORIO_COROUTINE_TEST_CASE(a_pending_peek_completes_when_bytes_arrive) {
    auto [client, server] = co_await make_stream_pair();
    std::array<char, 4> peeked{};
    std::size_t n = 0;
    bool done = false;
    error_code peek_ec;
    server.async_receive(asio::buffer(peeked), asio::socket_base::message_peek,
                         [&](error_code ec, std::size_t got) {
                             peek_ec = ec;
                             n = got;
                             done = true;
                         });
    co_await sleep_for(20ms);
    BOOST_TEST(!done);
    co_await client.async_send(asio::buffer("wake", 4), asio::use_awaitable);
    BOOST_TEST_REQUIRE(co_await wait_until(done));
    BOOST_TEST(!peek_ec, peek_ec.message());
    BOOST_TEST_REQUIRE(n >= 1u);
    std::array<char, 4> read{};
    co_await asio::async_read(server, asio::buffer(read), asio::use_awaitable);
    BOOST_TEST(std::string(read.data(), 4) == "wake");
    BOOST_TEST(std::string(peeked.data(), n) == std::string("wake").substr(0, n));
}

CORIO_COROUTINE_TEST_CASE(send_and_receive_without_flags_move_a_verified_pattern) {
    // Named, not structured bindings: clang 14 cannot capture those.
    auto pair = co_await make_stream_pair();
    auto& client = pair.first;
    auto& server = pair.second;
    const auto up = pattern(100000, 9);
    std::vector<unsigned char> got(up.size());
    auto send_all = [&]() -> asio::awaitable<void> {
        for (std::size_t sent = 0; sent < up.size();)
            sent += co_await client.async_send(asio::buffer(up.data() + sent, up.size() - sent), 0,
                                               asio::use_awaitable);
    };
    auto receive_all = [&]() -> asio::awaitable<void> {
        for (std::size_t received = 0; received < got.size();)
            received += co_await server.async_receive(
                asio::buffer(got.data() + received, got.size() - received), asio::use_awaitable);
    };
    co_await (send_all() && receive_all());
    BOOST_TEST((got == up));
    // The blocking overloads, back.
    BOOST_TEST(server.send(asio::buffer("ok", 2)) == 2u);
    std::array<char, 2> back{};
    std::size_t b = 0;
    while (b < back.size())
        b += client.receive(asio::buffer(back.data() + b, back.size() - b));
    BOOST_TEST(std::string(back.data(), 2) == "ok");
}

namespace {

/// What a flag the transport under test cannot carry gives: rsockets and the
/// framed tcp transport refuse it; plain kernel tcp passes it on.
void check_refused_flags(corio::stream& client, corio::stream& server) {
    std::array<char, 4> buf{};
    error_code ec;
    BOOST_TEST(server.receive(asio::buffer(buf), asio::socket_base::message_out_of_band, ec) == 0u);
    BOOST_TEST((ec == asio::error::operation_not_supported), ec.message());
    BOOST_TEST(client.send(asio::buffer("oob!", 4), asio::socket_base::message_out_of_band, ec) ==
               0u);
    BOOST_TEST((ec == asio::error::operation_not_supported), ec.message());
    BOOST_TEST(client.send(asio::buffer("peek", 4), asio::socket_base::message_peek, ec) == 0u);
    BOOST_TEST((ec == asio::error::operation_not_supported), ec.message());
    BOOST_TEST(client.send(asio::buffer("dnr!", 4), asio::socket_base::message_do_not_route, ec) ==
               0u);
    BOOST_TEST((ec == asio::error::operation_not_supported), ec.message());
    BOOST_CHECK_THROW(client.send(asio::buffer("eor!", 4), asio::socket_base::message_end_of_record),
                      boost::system::system_error);
    // Nothing moved: the stream is intact.
    BOOST_TEST(client.send(asio::buffer("good", 4)) == 4u);
    std::size_t n = 0;
    while (n < buf.size())
        n += server.receive(asio::buffer(buf.data() + n, buf.size() - n));
    BOOST_TEST(std::string(buf.data(), 4) == "good");
}

bool on_rsockets() { return corio::test::transport_under_test() == corio::transport::rsocket; }

} // namespace

CORIO_COROUTINE_TEST_CASE(flags_the_transport_cannot_carry_are_refused) {
    if (on_rsockets()) {
        auto [client, server] = co_await make_stream_pair();
        check_refused_flags(client, server);
    } else {
        // Plain kernel tcp hands the flags to the kernel, as Asio does.
        auto [client, server] = co_await make_stream_pair();
        BOOST_TEST(client.send(asio::buffer("dnr!", 4), asio::socket_base::message_do_not_route) ==
                   4u);
        std::array<char, 4> buf{};
        co_await asio::async_read(server, asio::buffer(buf), asio::use_awaitable);
        BOOST_TEST(std::string(buf.data(), 4) == "dnr!");
    }
    // The framed tcp transport (and rsockets with iomap_size) refuse them.
    auto [client, server] = co_await corio::test::make_mappable_stream_pair();
    check_refused_flags(client, server);
}

CORIO_COROUTINE_TEST_CASE(peek_after_an_iowrite_lands_it_and_keeps_the_stream_bytes) {
    auto [client, server] = co_await corio::test::make_mappable_stream_pair();
    std::vector<unsigned char> region(4096, 0);
    corio::iomap_registration registration(server, asio::buffer(region));
    // The mapping reaches the client with the server's next send.
    co_await asio::async_write(server, asio::buffer("m", 1), asio::use_awaitable);
    std::array<char, 1> hello{};
    co_await asio::async_read(client, asio::buffer(hello), asio::use_awaitable);
    client.add_remote_mapping(registration.offset(), region.size());

    const auto data = pattern(3000, 3);
    BOOST_TEST(co_await client.async_iowrite(asio::buffer(data), registration.offset(),
                                             asio::use_awaitable) == data.size());
    co_await asio::async_write(client, asio::buffer("done", 4), asio::use_awaitable);
    std::array<char, 4> peeked{};
    const auto n = co_await server.async_receive(asio::buffer(peeked),
                                                 asio::socket_base::message_peek,
                                                 asio::use_awaitable);
    BOOST_TEST_REQUIRE(n >= 1u);
    BOOST_TEST(std::string(peeked.data(), n) == std::string("done").substr(0, n));
    // The iowrite came before the stream bytes: it has landed.
    BOOST_TEST(std::equal(data.begin(), data.end(), region.begin()));
    std::array<char, 4> read{};
    co_await asio::async_read(server, asio::buffer(read), asio::use_awaitable);
    BOOST_TEST(std::string(read.data(), 4) == "done");
}

CORIO_COROUTINE_TEST_CASE(a_client_binds_before_connecting) {
    auto executor = co_await asio::this_coro::executor;
    const auto transport = corio::test::transport_under_test();
    corio::acceptor acceptor(executor);
    const auto protocol = corio::test::any_port_endpoint().protocol();
    acceptor.open(transport, protocol);
    acceptor.bind(corio::test::any_port_endpoint());
    acceptor.listen();
    // On tcp over IPv4 a second loopback address shows the bind took: the
    // kernel's own choice would be 127.0.0.1. IPv6 has one loopback address,
    // and the guest's rxe device has one address of each family.
    const bool own_address = on_rsockets() || corio::test::ipv6_under_test();
    const auto local_address = own_address ? corio::test::address_under_test()
                                           : asio::ip::make_address("127.0.0.2");
    corio::stream client(executor);
    client.open(transport, protocol);
    client.bind({local_address, 0});
    corio::stream server = co_await (acceptor.async_accept(asio::use_awaitable) &&
                                     client.async_connect(acceptor.local_endpoint(),
                                                          asio::use_awaitable));
    BOOST_TEST(client.local_endpoint().address() == local_address);
    BOOST_TEST((server.remote_endpoint() == client.local_endpoint()));
    BOOST_TEST(client.send(asio::buffer("bound", 5)) == 5u);
    std::array<char, 5> got{};
    co_await asio::async_read(server, asio::buffer(got), asio::use_awaitable);
    BOOST_TEST(std::string(got.data(), 5) == "bound");
    // A second bind, or one to an address this host lacks, is the
    // transport's error, reported and not thrown by the error_code overload.
    error_code ec;
    client.bind({local_address, 0}, ec);
    BOOST_TEST(ec.failed());
}
