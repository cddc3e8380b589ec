#define BOOST_TEST_MODULE rpoll_service
#include <boost/test/unit_test.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <future>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>

#include <corio/acceptor.hpp>
#include <corio/rpoll_service.hpp>
#include <corio/stream.hpp>

#include "transport_under_test.hpp"

// How the service waits for kernel sockets (the tcp transport): in the
// io_context's own reactor in thread mode, in its epoll set in busy mode or
// off an io_context. These cases cross those paths: a wait that is pending
// when the mode changes, a cancelled wait, a closed socket whose number is
// reused, and thread mode on an execution context that is not an io_context.

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;
using namespace asio::experimental::awaitable_operators;

namespace {

using stream_pair = std::pair<corio::stream, corio::stream>;

/// Reads on `stream`, through `context` run by another thread, until
/// `received` reaches `sent`: what cancelled reads left is still there, once.
void read_the_rest(asio::io_context& context, corio::stream& stream, std::size_t received,
                   std::size_t sent) {
    std::array<char, 4096> rest{};
    while (received < sent) {
        std::promise<std::size_t> got;
        asio::post(context, [&] {
            stream.async_read_some(asio::buffer(rest),
                                   [&](error_code, std::size_t n) { got.set_value(n); });
        });
        auto f = got.get_future();
        BOOST_TEST_REQUIRE((f.wait_for(5s) == std::future_status::ready));
        received += f.get();
    }
    BOOST_TEST(received == sent);
}

/// A connected tcp pair, made by running `context` until it is.
stream_pair make_pair_on(asio::io_context& context) {
    std::optional<stream_pair> made;
    asio::co_spawn(
        context,
        [&made]() -> asio::awaitable<void> { made.emplace(co_await corio::test::make_stream_pair()); },
        [](std::exception_ptr e) {
            if (e)
                std::rethrow_exception(e);
        });
    context.restart();
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!made && std::chrono::steady_clock::now() < deadline)
        context.run_one_for(100ms);
    BOOST_REQUIRE(made);
    return std::move(*made);
}

struct read_result {
    bool done = false;
    error_code ec;
    std::size_t bytes = 0;
    std::array<char, 16> data{};

    std::string_view text() const { return {data.data(), bytes}; }
};

void start_read(corio::stream& s, read_result& r, asio::cancellation_slot slot = {}) {
    r = {};
    s.async_read_some(asio::buffer(r.data),
                      asio::bind_cancellation_slot(slot, [&r](error_code ec, std::size_t n) {
                          r.ec = ec;
                          r.bytes = n;
                          r.done = true;
                      }));
}

/// Lets started operations reach their wait. Not poll(): in busy mode the
/// polling task re-posts itself while anything waits, so poll() never ends.
void run_briefly(asio::io_context& context) {
    context.restart();
    context.run_for(20ms);
}

/// Runs `context` until `r` is done or 5 s have passed.
void run_until_done(asio::io_context& context, const read_result& r) {
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    context.restart();
    while (!r.done && std::chrono::steady_clock::now() < deadline)
        context.run_one_for(100ms);
}

/// One message each way, each read started before its data is sent.
void round_trip(asio::io_context& context, stream_pair& pair, std::string_view tag) {
    auto& [client, server] = pair;
    read_result at_server, at_client;
    start_read(server, at_server);
    run_briefly(context);
    BOOST_TEST(!at_server.done);
    asio::write(client, asio::buffer(tag));
    run_until_done(context, at_server);
    BOOST_TEST_REQUIRE(at_server.done);
    BOOST_TEST(!at_server.ec, at_server.ec.message());
    BOOST_TEST(at_server.text() == tag);

    start_read(client, at_client);
    asio::write(server, asio::buffer(tag));
    run_until_done(context, at_client);
    BOOST_TEST_REQUIRE(at_client.done);
    BOOST_TEST(at_client.text() == tag);
}

/// A read starts waiting in mode `from`; the mode becomes `to`, then its
/// data arrives. The read completes, and so do later round trips in `to`
/// and, after switching back, in `from`.
void wait_across_a_switch(corio::poll_mode from, corio::poll_mode to) {
    asio::io_context context;
    corio::set_poll_mode(context, from);
    auto pair = make_pair_on(context);
    auto& [client, server] = pair;

    read_result r;
    start_read(server, r);
    run_briefly(context);
    BOOST_TEST_REQUIRE(!r.done);

    corio::set_poll_mode(context, to);
    asio::write(client, asio::buffer(std::string_view("across")));
    run_until_done(context, r);
    BOOST_TEST_REQUIRE(r.done);
    BOOST_TEST(!r.ec, r.ec.message());
    BOOST_TEST(r.text() == "across");

    round_trip(context, pair, "switched");
    corio::set_poll_mode(context, from);
    round_trip(context, pair, "switched back");
}

} // namespace

BOOST_AUTO_TEST_CASE(a_read_waiting_in_thread_mode_completes_after_a_switch_to_busy) {
    wait_across_a_switch(corio::poll_mode::thread, corio::poll_mode::busy);
}

BOOST_AUTO_TEST_CASE(a_read_waiting_in_busy_mode_completes_after_a_switch_to_thread) {
    wait_across_a_switch(corio::poll_mode::busy, corio::poll_mode::thread);
}

BOOST_AUTO_TEST_CASE(run_returns_once_the_only_waiting_read_is_cancelled) {
    for (const auto mode : {corio::poll_mode::thread, corio::poll_mode::busy}) {
        asio::io_context context;
        corio::set_poll_mode(context, mode);
        auto pair = make_pair_on(context);
        auto& [client, server] = pair;

        asio::cancellation_signal cancel;
        read_result r;
        start_read(server, r, cancel.slot());
        run_briefly(context);
        BOOST_TEST_REQUIRE(!r.done);
        cancel.emit(asio::cancellation_type::terminal);

        // No wait may stay behind in the reactor or the poll sets: run()
        // returns by itself once the cancelled read has completed.
        context.restart();
        auto ran = std::async(std::launch::async, [&context] { return context.run_for(5s); });
        BOOST_TEST_REQUIRE((ran.wait_for(6s) == std::future_status::ready));
        ran.get();
        BOOST_TEST(context.stopped());
        BOOST_TEST(r.done);
        BOOST_TEST((r.ec == asio::error::operation_aborted), r.ec.message());

        // The stream still works after the cancelled wait.
        round_trip(context, pair, "after cancel");
    }
}

BOOST_AUTO_TEST_CASE(a_closed_socket_s_number_is_reused_safely) {
    asio::io_context context;
    corio::set_poll_mode(context, corio::poll_mode::thread);
    auto first = make_pair_on(context);
    read_result r;
    start_read(first.second, r);
    run_briefly(context);
    BOOST_TEST_REQUIRE(!r.done);
    const int old_fd = first.second.native_handle();
    first.second.close();
    run_until_done(context, r);
    BOOST_TEST((r.ec == asio::error::operation_aborted), r.ec.message());

    // The next sockets take the freed numbers; the reactor must have let go
    // of the old registration without closing anything, or these would
    // fail or see another socket's events. Linux hands out the lowest free
    // number: the new pair's acceptor takes the old one's, freed when the
    // first pair was made, and its client the closed server's.
    auto second = make_pair_on(context);
    BOOST_TEST_MESSAGE("closed fd " << old_fd << ", new fds " << second.first.native_handle()
                                    << " and " << second.second.native_handle());
    BOOST_TEST_REQUIRE((second.first.native_handle() == old_fd ||
                        second.second.native_handle() == old_fd),
                       "the closed descriptor " << old_fd << " was not reused: new pair "
                                                << second.first.native_handle() << ", "
                                                << second.second.native_handle());
    round_trip(context, second, "reused");
    round_trip(context, second, "again");

    // The old peer sees the close as end of stream.
    read_result eof;
    start_read(first.first, eof);
    run_until_done(context, eof);
    BOOST_TEST((eof.ec == asio::error::eof), eof.ec.message());
}

BOOST_AUTO_TEST_CASE(thread_mode_ping_pongs_on_two_threads_lose_no_wake) {
    // A reactor wait of a read or write starts without re-arming the
    // descriptor (detail::reactor_wait_op): it relies on the reactor's own
    // record of events since the last wait of its kind. Data that arrives
    // between an operation's failed try and the start of its wait must
    // still end that wait. With two threads running the io_context, the
    // reactor's thread and the one starting a wait interleave in every
    // order; a lost wake leaves a pair stuck, which the bound catches.
    constexpr int pairs = 8;
    constexpr int round_trips = 2000;
    asio::io_context context;
    corio::set_poll_mode(context, corio::poll_mode::thread);
    std::vector<stream_pair> made;
    for (int i = 0; i < pairs; ++i)
        made.push_back(make_pair_on(context));
    std::atomic<int> finished{0};
    std::atomic<int> failed{0};
    for (auto& pair : made) {
        auto bounce = [](corio::stream& s, bool first, int round_trips) -> asio::awaitable<void> {
            std::array<char, 65> buffer{};
            // One write, read in two parts: the second read finds its byte
            // already there, after the event that announced it was used.
            // (Not two writes: with Nagle's algorithm, this host's loopback
            // TCP can hold a second small segment for seconds, in Asio's
            // own sockets as in corio's.)
            auto receive = [&]() -> asio::awaitable<void> {
                co_await asio::async_read(s, asio::buffer(buffer.data(), 64), asio::use_awaitable);
                co_await asio::async_read(s, asio::buffer(buffer.data() + 64, 1),
                                          asio::use_awaitable);
            };
            for (int i = 0; i < round_trips; ++i) {
                if (first)
                    co_await asio::async_write(s, asio::buffer(buffer), asio::use_awaitable);
                co_await receive();
                if (!first)
                    co_await asio::async_write(s, asio::buffer(buffer), asio::use_awaitable);
            }
        };
        auto count = [&](std::exception_ptr e) {
            (e ? failed : finished).fetch_add(1);
        };
        asio::co_spawn(context, bounce(pair.first, true, round_trips), count);
        asio::co_spawn(context, bounce(pair.second, false, round_trips), count);
    }
    context.restart();
    auto second = std::async(std::launch::async, [&context] { context.run_for(30s); });
    context.run_for(30s);
    second.get();
    BOOST_TEST(failed.load() == 0);
    BOOST_TEST(finished.load() == 2 * pairs,
               (2 * pairs - finished.load()) << " coroutines did not finish their "
                                             << round_trips << " round trips in 30 s");
}

BOOST_AUTO_TEST_CASE(a_write_waits_for_room_in_thread_mode_and_completes) {
    // A write's first wait on a registration, and the reactor's first
    // registration for writable events: 8 MiB cannot fit the socket
    // buffers, so the write waits until the reader starts.
    asio::io_context context;
    corio::set_poll_mode(context, corio::poll_mode::thread);
    auto pair = make_pair_on(context);
    auto& [client, server] = pair;
    std::vector<char> out(8 << 20, 'w');
    std::vector<char> in(out.size());
    std::optional<std::size_t> written;
    asio::async_write(client, asio::buffer(out), [&](error_code ec, std::size_t n) {
        BOOST_TEST(!ec, ec.message());
        written = n;
    });
    run_briefly(context);
    BOOST_TEST_REQUIRE(!written, "8 MiB fit the socket buffers: the write never waited");
    std::optional<std::size_t> read;
    asio::async_read(server, asio::buffer(in), [&](error_code ec, std::size_t n) {
        BOOST_TEST(!ec, ec.message());
        read = n;
    });
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    context.restart();
    while (!(written && read) && std::chrono::steady_clock::now() < deadline)
        context.run_one_for(100ms);
    BOOST_TEST_REQUIRE(written.has_value());
    BOOST_TEST_REQUIRE(read.has_value());
    BOOST_TEST(*written == out.size());
    BOOST_TEST((in == out));
}

BOOST_AUTO_TEST_CASE(completions_never_run_are_destroyed_with_the_io_context) {
    // A completion is queued to the io_context's scheduler as the operation
    // itself (handler_operation::post_run); destroying the io_context before
    // it runs must destroy the handler, not invoke it and not leak it (the
    // sanitizer builds check the leak). A write and a read that both finish
    // at once, in both modes.
    for (const auto mode : {corio::poll_mode::thread, corio::poll_mode::busy}) {
        auto held = std::make_shared<int>(0);
        bool invoked = false;
        {
            asio::io_context context;
            corio::set_poll_mode(context, mode);
            auto pair = make_pair_on(context);
            auto& [client, server] = pair;
            asio::write(client, asio::buffer(std::string_view("data")));
            std::array<char, 4> in{};
            server.async_read_some(asio::buffer(in), [held, &invoked](error_code, std::size_t) {
                invoked = true;
            });
            client.async_write_some(asio::buffer(std::string_view("more")),
                                    [held, &invoked](error_code, std::size_t) { invoked = true; });
            BOOST_TEST(held.use_count() == 3);
        }
        BOOST_TEST(!invoked, "a completion ran although its io_context was never run again");
        BOOST_TEST(held.use_count() == 1, "a handler outlived its io_context");
    }
}

BOOST_AUTO_TEST_CASE(thread_mode_on_an_execution_context_that_is_not_an_io_context) {
    // There is no io_context reactor here: the poller thread waits in the
    // service's epoll set.
    asio::thread_pool pool(1);
    corio::set_poll_mode(pool, corio::poll_mode::thread);
    auto done = asio::co_spawn(
        pool,
        []() -> asio::awaitable<std::string> {
            auto [client, server] = co_await corio::test::make_stream_pair();
            std::array<char, 5> got{};
            std::string result;
            for (const std::string_view message : {"first", "again"}) {
                // The read starts first and waits for the write.
                co_await (asio::async_read(server, asio::buffer(got), asio::use_awaitable) &&
                          asio::async_write(client, asio::buffer(message), asio::use_awaitable));
                result.append(got.data(), got.size());
            }
            co_return result;
        },
        asio::use_future);
    BOOST_TEST_REQUIRE((done.wait_for(10s) == std::future_status::ready));
    BOOST_TEST(done.get() == "firstagain");
    pool.join();
}

// Two reads queued on one socket, and one write that brings bytes for both.
// In busy mode the socket waits in the service's epoll set, edge-triggered:
// the one edge runs the first read, which takes one byte; the second read
// must make its call then, not wait for an edge that will not come.
BOOST_AUTO_TEST_CASE(two_queued_reads_both_complete_from_one_write) {
    for (const auto mode : {corio::poll_mode::thread, corio::poll_mode::busy}) {
        asio::io_context context;
        corio::set_poll_mode(context, mode);
        auto pair = make_pair_on(context);
        auto& [client, server] = pair;
        std::array<char, 1> first{}, second{};
        read_result a, b;
        server.async_read_some(asio::buffer(first), [&a](error_code ec, std::size_t n) {
            a.ec = ec;
            a.bytes = n;
            a.done = true;
        });
        server.async_read_some(asio::buffer(second), [&b](error_code ec, std::size_t n) {
            b.ec = ec;
            b.bytes = n;
            b.done = true;
        });
        run_briefly(context);
        BOOST_TEST_REQUIRE(!a.done);
        asio::write(client, asio::buffer(std::string_view("xy")));
        run_until_done(context, a);
        run_until_done(context, b);
        BOOST_TEST_REQUIRE(a.done);
        BOOST_TEST_REQUIRE(b.done, "the second read was left waiting, mode " << int(mode));
        BOOST_TEST(!a.ec, a.ec.message());
        BOOST_TEST(!b.ec, b.ec.message());
        BOOST_TEST((a.bytes == 1u && b.bytes == 1u));
        BOOST_TEST(std::string_view(first.data(), 1) == "x");
        BOOST_TEST(std::string_view(second.data(), 1) == "y");
    }
}

namespace {

/// server.read_some says would_block; bytes then arrive and the service's
/// poller (`spin` keeps it turning) reports their edge while nothing waits;
/// an async_wait(wait_read) started after that must end. It makes no look
/// of its own after a would_block (socket_impl::would_block_note), and no
/// second edge comes: only the mark the unclaimed edge left ends it.
template <class Context>
void a_wait_after_an_unclaimed_edge_ends(Context& context, corio::stream& client,
                                         corio::stream& server, std::function<void()> spin) {
    std::array<char, 8> got{};
    // A first read that waits registers the server's descriptor with the
    // poller, where it stays.
    std::promise<std::size_t> first;
    asio::post(context, [&] {
        server.async_read_some(asio::buffer(got),
                               [&first](error_code, std::size_t n) { first.set_value(n); });
    });
    spin();
    asio::write(client, asio::buffer(std::string_view("first")));
    auto first_read = first.get_future();
    for (int i = 0; i < 250 && first_read.wait_for(0s) != std::future_status::ready; ++i)
        spin();
    BOOST_TEST_REQUIRE((first_read.wait_for(0s) == std::future_status::ready));
    BOOST_TEST(first_read.get() == 5u);

    server.non_blocking(true);
    error_code ec;
    BOOST_TEST(server.read_some(asio::buffer(got), ec) == 0u);
    BOOST_TEST_REQUIRE((ec == asio::error::would_block), ec.message());
    asio::write(client, asio::buffer(std::string_view("edge")));
    spin();
    std::promise<error_code> waited;
    asio::post(context, [&] {
        server.async_wait(corio::stream::wait_read, [&waited](error_code e) { waited.set_value(e); });
    });
    auto f = waited.get_future();
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (f.wait_for(0s) != std::future_status::ready && std::chrono::steady_clock::now() < deadline)
        spin();
    BOOST_TEST_REQUIRE((f.wait_for(0s) == std::future_status::ready), "the wait missed the bytes");
    BOOST_TEST(!f.get());
    BOOST_TEST(server.read_some(asio::buffer(got), ec) == 4u);
}

} // namespace

BOOST_AUTO_TEST_CASE(a_wait_after_an_edge_no_operation_claimed_ends_in_busy_mode) {
    asio::io_context context;
    corio::set_poll_mode(context, corio::poll_mode::busy);
    auto pair = make_pair_on(context);
    auto& [client, server] = pair;
    // A read on the other end that never completes keeps the busy task
    // polling the epoll set.
    read_result idle;
    start_read(client, idle);
    a_wait_after_an_unclaimed_edge_ends(context, client, server, [&] { run_briefly(context); });
    BOOST_TEST(!idle.done);
}

BOOST_AUTO_TEST_CASE(a_wait_after_an_edge_no_operation_claimed_ends_off_an_io_context) {
    // The poller thread waits in the service's epoll set, and wakes for the
    // edge whether anything waits or not.
    asio::thread_pool pool(1);
    corio::set_poll_mode(pool, corio::poll_mode::thread);
    std::optional<stream_pair> pair;
    auto made = asio::co_spawn(
        pool,
        [&pair]() -> asio::awaitable<void> { pair.emplace(co_await corio::test::make_stream_pair()); },
        asio::use_future);
    BOOST_TEST_REQUIRE((made.wait_for(10s) == std::future_status::ready));
    made.get();
    // Named references, not a structured binding: clang 14 refuses to
    // capture a binding in the lambdas below.
    auto& client = pair->first;
    auto& server = pair->second;
    // Starts the poller thread: a read that waits, on the other end.
    std::promise<void> idle_started;
    std::array<char, 1> idle_buffer{};
    asio::post(pool, [&] {
        client.async_read_some(asio::buffer(idle_buffer), [](error_code, std::size_t) {});
        idle_started.set_value();
    });
    idle_started.get_future().wait();
    a_wait_after_an_unclaimed_edge_ends(pool, client, server,
                                        [] { std::this_thread::sleep_for(20ms); });
    std::promise<void> closed;
    asio::post(pool, [&] {
        client.close();
        server.close();
        closed.set_value();
    });
    closed.get_future().wait();
    pool.join();
}

namespace {

/// Threads of this process now.
int thread_count() {
    int n = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task"))
        ++n;
    return n;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_refused_mode_switch_changes_nothing) {
    asio::io_context context;
    corio::set_poll_mode(context, corio::poll_mode::thread);
    auto pair = make_pair_on(context);
    auto& [client, server] = pair;
    read_result r;
    start_read(server, r);
    run_briefly(context);
    BOOST_TEST_REQUIRE(!r.done);

    // Busy mode without an executor is refused, and must leave the mode,
    // the executor and the waiting read as they were.
    auto& service = asio::use_service<corio::rpoll_service>(context);
    BOOST_CHECK_THROW(service.set_mode(corio::poll_mode::busy, asio::any_io_executor{}),
                      boost::system::system_error);
    BOOST_TEST((service.mode() == corio::poll_mode::thread));
    asio::write(client, asio::buffer(std::string_view("kept")));
    run_until_done(context, r);
    BOOST_TEST_REQUIRE(r.done, "the waiting read was lost by the refused switch");
    BOOST_TEST(r.text() == "kept");
    round_trip(context, pair, "still");
}

BOOST_AUTO_TEST_CASE(the_service_is_the_same_whichever_executor_touches_it_first) {
    // A strand behind a polymorphic executor touches the service first. On
    // an io_context, kernel sockets must still wait in its reactor in thread
    // mode: no poller thread starts for a tcp wait.
    asio::io_context context;
    corio::stream first(asio::any_io_executor(asio::make_strand(context)));
    corio::set_poll_mode(context, corio::poll_mode::thread);
    const int threads_before = thread_count();
    auto pair = make_pair_on(context);
    read_result r;
    start_read(pair.second, r);
    run_briefly(context);
    BOOST_TEST_REQUIRE(!r.done);
    BOOST_TEST(thread_count() == threads_before,
               "a tcp wait started a thread: the service was made without its io_context");
    asio::write(pair.first, asio::buffer(std::string_view("reactor")));
    run_until_done(context, r);
    BOOST_TEST(r.text() == "reactor");
}

BOOST_AUTO_TEST_CASE(a_close_from_another_thread_ends_a_blocking_read) {
    for (const auto mode : {corio::poll_mode::thread, corio::poll_mode::busy}) {
        asio::io_context context;
        corio::set_poll_mode(context, mode);
        auto pair = make_pair_on(context);
        auto& server = pair.second;
        std::promise<error_code> result;
        auto ended = result.get_future();
        std::thread reader([&] {
            std::array<char, 8> buf{};
            error_code ec;
            (void)server.read_some(asio::buffer(buf), ec);
            result.set_value(ec);
        });
        std::this_thread::sleep_for(100ms);
        BOOST_TEST_REQUIRE((ended.wait_for(0s) == std::future_status::timeout));
        server.close();
        if (ended.wait_for(5s) != std::future_status::ready) {
            // The reader is stuck in a wait on a closed descriptor: it can
            // neither be joined nor left behind.
            std::fputs("FAIL: a blocking read_some did not end when its stream was closed\n",
                       stderr);
            std::_Exit(1);
        }
        reader.join();
        const auto ec = ended.get();
        BOOST_TEST((ec == asio::error::operation_aborted), ec.message());

        // The peer sees the close as end of stream.
        read_result eof;
        start_read(pair.first, eof);
        run_until_done(context, eof);
        BOOST_TEST((eof.ec == asio::error::eof), eof.ec.message());
    }
}

BOOST_AUTO_TEST_CASE(close_and_cancel_from_other_threads_race_operations_safely) {
    // Run under TSan and ASan in CI: close() against a connect made on the
    // io_context's thread, cancel() against a read that its data may be
    // completing at the same moment, and a cancellation signal emitted from
    // another thread on a waiting read. Every operation completes once,
    // with its result or operation_aborted, and nothing is read twice.
    for (const auto mode : {corio::poll_mode::thread, corio::poll_mode::busy}) {
        asio::io_context context;
        corio::set_poll_mode(context, mode);
        auto pair = make_pair_on(context);
        context.restart();
        auto guard = asio::make_work_guard(context);
        std::thread runner([&] { context.run(); });
        corio::acceptor acceptor(context, corio::test::any_port_endpoint(), corio::transport::tcp);
        const auto where = acceptor.local_endpoint();
        constexpr int rounds = 300;
        int completions = 0;
        for (int i = 0; i < rounds; ++i) {
            // close() against connect.
            corio::stream client(context, corio::transport::tcp);
            std::promise<void> connected;
            asio::post(context, [&] {
                client.async_connect(where, [&](error_code) { connected.set_value(); });
            });
            std::this_thread::sleep_for(std::chrono::microseconds(i % 50));
            client.close(); // from this thread, as the connect runs on the other
            BOOST_TEST_REQUIRE((connected.get_future().wait_for(5s) == std::future_status::ready));
            ++completions;
        }
        BOOST_TEST(completions == rounds);

        // cancel() and a foreign cancellation signal against reads.
        auto& a = pair.first; // not a structured binding: clang 14 lambdas cannot capture one
        auto& b = pair.second;
        std::atomic<std::size_t> received{0};
        std::atomic<std::size_t> sent{0};
        for (int i = 0; i < rounds; ++i) {
            std::promise<std::pair<error_code, std::size_t>> read_done;
            asio::cancellation_signal signal;
            std::array<char, 64> buf{};
            std::promise<void> started;
            asio::post(context, [&] {
                b.async_read_some(asio::buffer(buf),
                                  asio::bind_cancellation_slot(
                                      signal.slot(), [&](error_code ec, std::size_t n) {
                                          read_done.set_value({ec, n});
                                      }));
                started.set_value();
            });
            auto done = read_done.get_future();
            // A cancellation before the read exists would cancel nothing.
            started.get_future().wait();
            if (i % 2 == 0) {
                // Data and cancel() at once, from two other threads.
                std::thread writer([&] {
                    asio::post(context, [&] {
                        a.async_write_some(asio::buffer("x", 1),
                                           [&](error_code ec, std::size_t n) {
                                               if (!ec)
                                                   sent += n;
                                           });
                    });
                });
                b.cancel();
                writer.join();
            } else {
                // The read waits (no data): the signal comes from this thread.
                std::this_thread::sleep_for(1ms);
                signal.emit(asio::cancellation_type::terminal);
            }
            BOOST_TEST_REQUIRE((done.wait_for(5s) == std::future_status::ready));
            const auto [ec, n] = done.get();
            BOOST_TEST((!ec || ec == asio::error::operation_aborted), ec.message());
            received += n;
        }
        // What the cancelled reads did not take is still there, once.
        std::promise<void> flushed;
        asio::post(context, [&] { flushed.set_value(); });
        flushed.get_future().wait();
        read_the_rest(context, b, received, sent);
        asio::post(context, [&] {
            a.close();
            b.close();
            acceptor.close();
        });
        guard.reset();
        runner.join();
    }
}

BOOST_AUTO_TEST_CASE(a_cancellation_emitted_from_another_thread_may_race_the_completion) {
    // Asio's own sockets allow this: a cancellation signal emitted from a
    // thread of its own just as the operation completes on the io_context's
    // thread (the emit and the completion are the only users of the
    // signal). corio cleared the slot on completion, which raced the emit
    // (TSan in every run, SIGSEGV in Asio's emit in most); its canceller now
    // stays in the slot and finds nothing. Each read completes once, with its
    // byte or operation_aborted, and no byte is lost or read twice.
    for (const auto mode : {corio::poll_mode::thread, corio::poll_mode::busy}) {
        asio::io_context context;
        corio::set_poll_mode(context, mode);
        auto pair = make_pair_on(context);
        context.restart();
        auto guard = asio::make_work_guard(context);
        std::thread runner([&] { context.run(); });
        auto& a = pair.first;
        auto& b = pair.second;
        constexpr int rounds = 2000;
        std::size_t received = 0, sent = 0, aborted = 0;
        for (int i = 0; i < rounds; ++i) {
            asio::cancellation_signal signal;
            std::array<char, 64> buf{};
            std::promise<std::pair<error_code, std::size_t>> read_done;
            std::promise<void> started;
            asio::post(context, [&] {
                b.async_read_some(asio::buffer(buf),
                                  asio::bind_cancellation_slot(
                                      signal.slot(), [&](error_code ec, std::size_t n) {
                                          read_done.set_value({ec, n});
                                      }));
                started.set_value();
            });
            started.get_future().wait();
            // The byte, written from this thread: nothing orders the read's
            // completion on the io_context's thread before the emit below.
            error_code write_ec;
            const auto wrote = a.write_some(asio::buffer("x", 1), write_ec);
            BOOST_TEST_REQUIRE(!write_ec, write_ec.message());
            BOOST_TEST_REQUIRE(wrote == 1u);
            // The read completes within microseconds: emit after a delay
            // that varies from round to round, so that emits land before,
            // during and after its completion.
            std::atomic<int> spin{0};
            while (spin.fetch_add(1, std::memory_order_relaxed) < (i % 64) * 20) {
            }
            signal.emit(asio::cancellation_type::terminal);
            auto done = read_done.get_future();
            BOOST_TEST_REQUIRE((done.wait_for(5s) == std::future_status::ready));
            const auto [ec, n] = done.get();
            BOOST_TEST_REQUIRE((!ec || ec == asio::error::operation_aborted), ec.message());
            if (ec)
                ++aborted;
            received += n;
            ++sent;
        }
        // The bytes the cancelled reads left are still there, once.
        read_the_rest(context, b, received, sent);
        BOOST_TEST_MESSAGE("mode " << static_cast<int>(mode) << ": " << aborted << " of " << rounds
                                   << " reads cancelled");
        asio::post(context, [&] {
            a.close();
            b.close();
        });
        guard.reset();
        runner.join();
    }
}
