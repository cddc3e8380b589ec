#define BOOST_TEST_MODULE rpoll_service_slow_calls_rdma
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <sys/mman.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <corio/acceptor.hpp>
#include <corio/iomap_registration.hpp>
#include <corio/socket_base.hpp>
#include <corio/stream.hpp>

#include "background_jobs.hpp"
#include "coroutine_test.hpp"
#include "transport_under_test.hpp"

// Nothing that can block runs on an io_context thread (doc/architecture.md,
// "Which thread runs what"). Run on rsockets with test/support's
// slow_rsocket_calls preloaded, which makes every rsocket close and shutdown
// call, and so the priming of librdmacm's services, take CORIO_SLOW_RSOCKET_MS longer:
// if any of them ran on the io_context thread, a round trip on another
// stream of that context would take at least that long.

CORIO_TEST_TRANSPORT_FIXTURE();

namespace asio = boost::asio;
using namespace std::chrono_literals;
using namespace asio::experimental::awaitable_operators;
using boost::system::error_code;
using clock_type = std::chrono::steady_clock;

namespace {

long slowed_calls() {
    using counter = long (*)();
    const auto count = reinterpret_cast<counter>(::dlsym(RTLD_DEFAULT, "corio_slowed_rsocket_calls"));
    BOOST_TEST_REQUIRE(count != nullptr,
                       "run with LD_PRELOAD of test/support's libslow_rsocket_calls.so");
    return count();
}

long calls_beside_shutdown() {
    using counter = long (*)();
    const auto count =
        reinterpret_cast<counter>(::dlsym(RTLD_DEFAULT, "corio_rsocket_calls_beside_shutdown"));
    BOOST_TEST_REQUIRE(count != nullptr,
                       "run with LD_PRELOAD of test/support's libslow_rsocket_calls.so");
    return count();
}

std::chrono::milliseconds injected_delay() {
    const char* text = std::getenv("CORIO_SLOW_RSOCKET_MS");
    return std::chrono::milliseconds(text ? std::strtol(text, nullptr, 10) : 300);
}

asio::awaitable<void> sleep_for(clock_type::duration d) {
    asio::steady_timer timer(co_await asio::this_coro::executor, d);
    co_await timer.async_wait(asio::use_awaitable);
}

/// One 64-byte round trip from `a` through `b` and back.
asio::awaitable<clock_type::duration> round_trip(corio::stream& a, corio::stream& b) {
    std::array<unsigned char, 64> out{};
    std::array<unsigned char, 64> in{};
    out.fill(0x5a);
    const auto start = clock_type::now();
    co_await asio::async_write(a, asio::buffer(out), asio::use_awaitable);
    co_await asio::async_read(b, asio::buffer(in), asio::use_awaitable);
    co_await asio::async_write(b, asio::buffer(in), asio::use_awaitable);
    co_await asio::async_read(a, asio::buffer(in), asio::use_awaitable);
    co_return clock_type::now() - start;
}

struct timing {
    std::vector<double> ms;
    double worst() const { return ms.empty() ? 0 : *std::max_element(ms.begin(), ms.end()); }
    double median() const {
        auto v = ms;
        std::sort(v.begin(), v.end());
        return v.empty() ? 0 : v[v.size() / 2];
    }
};

/// Round trips until `stop` is set (and at least `at_least` of them).
asio::awaitable<void> ping_until(corio::stream& a, corio::stream& b, const bool& stop,
                                 timing& out, std::size_t at_least = 1) {
    while (!stop || out.ms.size() < at_least) {
        const auto t = co_await round_trip(a, b);
        out.ms.push_back(std::chrono::duration<double, std::milli>(t).count());
    }
}

/// Fails the case unless the background closes it started end within `limit`.
asio::awaitable<void> expect_background_jobs_finished(clock_type::duration limit) {
    const bool finished = co_await corio::test::await_background_jobs(limit);
    BOOST_TEST(finished, "background closes still pending after the limit");
}

} // namespace

// Runs alone in its process (test/meson.build): it makes the process's
// first listener and connection. The first rsocket starts priming librdmacm's
// services in the background, each priming start an rclose slowed by the
// preload; neither that nor the first listen, accept and connect may stall
// another stream of the io_context. The connection service's priming (8
// slowed starts) is still under way when the connect begins, so the connect
// is deferred (connect_state::deferred) and retried on the service's tick;
// with a claim that waited instead, the worst round trip was 5.9 s.
CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(a_first_connect_never_waits_for_the_priming, 120s,
                                        *boost::unit_test::label("own_process")) {
    const auto delay = injected_delay();
    auto executor = co_await asio::this_coro::executor;
    // Kernel TCP pings: nothing here touches rsockets yet.
    auto [ping_a, ping_b] = co_await corio::test::make_tcp_stream_pair();

    // The listener is made on a thread of its own: listen is a synchronous
    // call and waits for the listen service's (shorter) priming.
    std::unique_ptr<corio::acceptor> listener;
    std::thread([&] {
        listener = std::make_unique<corio::acceptor>(executor, corio::test::any_port_endpoint(),
                                                     corio::transport::rsocket);
    }).join();

    timing during;
    bool stop = false;
    bool connected = false;
    asio::co_spawn(
        executor,
        [&]() -> asio::awaitable<void> {
            // co_spawn from this thread runs the coroutine at once: let the
            // round trips start first (see the case above).
            co_await sleep_for(200ms);
            corio::stream client(executor, corio::transport::rsocket);
            const auto started = clock_type::now();
            auto server = co_await (listener->async_accept(asio::use_awaitable) &&
                                    client.async_connect(listener->local_endpoint(),
                                                         asio::use_awaitable));
            BOOST_TEST_MESSAGE("the first accept and connect took "
                               << std::chrono::duration<double>(clock_type::now() - started).count()
                               << " s");
            std::array<unsigned char, 3> word{'o', 'k', '!'};
            co_await asio::async_write(client, asio::buffer(word), asio::use_awaitable);
            std::array<unsigned char, 3> got{};
            co_await asio::async_read(server, asio::buffer(got), asio::use_awaitable);
            BOOST_TEST((got == word));
            connected = true;
            stop = true;
        },
        [](std::exception_ptr e) {
            if (e)
                std::rethrow_exception(e);
        });
    co_await ping_until(ping_a, ping_b, stop, during, 10);
    BOOST_TEST_REQUIRE(connected);
    BOOST_TEST_MESSAGE("injected delay " << delay.count() << " ms per call; round trips during "
                                         << "them: " << during.ms.size() << ", median "
                                         << during.median() << " ms, worst " << during.worst()
                                         << " ms");
    BOOST_TEST(during.worst() < delay.count() / 2.0,
               "worst round trip " << during.worst() << " ms during the first connect");
    listener->close();
    co_await expect_background_jobs_finished(60s);
}

namespace {

/// test/support's stream_peer, listening on an rsocket in a process of its
/// own; killed when this goes.
class listening_peer {
public:
    listening_peer() {
        const char* program = std::getenv("CORIO_STREAM_PEER");
        BOOST_TEST_REQUIRE(program != nullptr, "CORIO_STREAM_PEER names the stream_peer program");
        int out[2];
        BOOST_TEST_REQUIRE(::pipe(out) == 0);
        posix_spawn_file_actions_t actions;
        ::posix_spawn_file_actions_init(&actions);
        ::posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
        ::posix_spawn_file_actions_addclose(&actions, out[0]);
        const std::string path(program), address = corio::test::address_under_test().to_string();
        char* const argv[] = {const_cast<char*>(path.c_str()), const_cast<char*>("listen"),
                              const_cast<char*>("rsocket"), const_cast<char*>(address.c_str()),
                              nullptr};
        // posix_spawn, not fork: this process has threads.
        const int spawned = ::posix_spawn(&pid_, program, &actions, nullptr, argv, environ);
        ::posix_spawn_file_actions_destroy(&actions);
        ::close(out[1]);
        BOOST_TEST_REQUIRE(spawned == 0);
        // "listening PORT\n", within a minute: its own listen waits for its
        // (slowed) listen service priming.
        std::string line;
        char c = 0;
        pollfd fd{out[0], POLLIN, 0};
        while (line.find('\n') == std::string::npos && ::poll(&fd, 1, 60000) == 1 &&
               ::read(out[0], &c, 1) == 1)
            line += c;
        ::close(out[0]);
        BOOST_TEST_REQUIRE(line.rfind("listening ", 0) == 0, "stream_peer said '" << line << "'");
        port_ = static_cast<unsigned short>(std::stoul(line.substr(10)));
    }
    ~listening_peer() {
        ::kill(pid_, SIGKILL);
        int status = 0;
        ::waitpid(pid_, &status, 0);
    }
    listening_peer(const listening_peer&) = delete;
    listening_peer& operator=(const listening_peer&) = delete;

    asio::ip::tcp::endpoint endpoint() const { return {corio::test::address_under_test(), port_}; }

private:
    pid_t pid_ = -1;
    unsigned short port_ = 0;
};

} // namespace

// Runs alone in its process, whose first rsocket is the connecting stream:
// its open starts the priming of the connection service (32 places, 8
// slowed rcloses: seconds), and the connect made at once finds it under way.
// The connect must come back (connect_state::deferred) and be retried on the
// service's tick, never wait on the io_context thread: round trips on
// another stream keep their latency, and the connect still completes. (With
// a claim that waited instead, the worst round trip was 4.6 s.)
CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(a_connect_during_the_priming_waits_off_the_thread, 120s,
                                        *boost::unit_test::label("own_process")) {
    const auto delay = injected_delay();
    auto executor = co_await asio::this_coro::executor;
    // The listener is in another process, so nothing here primes anything.
    listening_peer peer;
    auto [ping_a, ping_b] = co_await corio::test::make_tcp_stream_pair();
    timing during;
    bool stop = false;
    bool connected = false;
    double connect_took = 0;
    asio::co_spawn(
        executor,
        [&]() -> asio::awaitable<void> {
            // co_spawn from this thread runs the coroutine at once: let the
            // round trips start first, so that they are under way when the
            // connect begins.
            co_await sleep_for(200ms);
            corio::stream client(executor, corio::transport::rsocket);
            const auto started = clock_type::now();
            co_await client.async_connect(peer.endpoint(), asio::use_awaitable);
            connect_took = std::chrono::duration<double>(clock_type::now() - started).count();
            std::array<char, 5> ready{};
            co_await asio::async_read(client, asio::buffer(ready), asio::use_awaitable);
            BOOST_TEST(std::string(ready.data(), 5) == "ready");
            connected = true;
            stop = true;
        },
        [](std::exception_ptr e) {
            if (e)
                std::rethrow_exception(e);
        });
    co_await ping_until(ping_a, ping_b, stop, during, 10);
    BOOST_TEST_REQUIRE(connected);
    BOOST_TEST_MESSAGE("the connect took " << connect_took << " s; round trips meanwhile: "
                                           << during.ms.size() << ", median " << during.median()
                                           << " ms, worst " << during.worst() << " ms");
    BOOST_TEST(during.worst() < delay.count() / 2.0,
               "worst round trip " << during.worst() << " ms during the connect");
    co_await expect_background_jobs_finished(60s);
}

CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(closes_and_shutdowns_never_stall_other_streams, 120s) {
    const long calls_before = slowed_calls();
    const auto delay = injected_delay();
    auto executor = co_await asio::this_coro::executor;
    auto [ping_a, ping_b] = co_await corio::test::make_stream_pair();
    std::vector<std::pair<corio::stream, corio::stream>> victims;
    for (int i = 0; i < 4; ++i)
        victims.push_back(co_await corio::test::make_stream_pair());
    auto listener = std::make_unique<corio::acceptor>(executor, corio::test::any_port_endpoint(),
                                                      corio::test::transport_under_test());

    timing before;
    bool stop = true;
    co_await ping_until(ping_a, ping_b, stop, before, 100);

    // While the pings go on: shut down and close every victim (each call
    // slowed by `delay` where it runs), close the listener, and make a new
    // listener and connection (a listen and a connect claim room in
    // librdmacm's services).
    timing during;
    stop = false;
    bool closed = false;
    asio::co_spawn(
        executor,
        [&]() -> asio::awaitable<void> {
            // Each step is timed: a slow one names itself in the log.
            auto step = clock_type::now();
            const auto lap = [&step](const char* what) {
                const auto now = clock_type::now();
                const auto ms = std::chrono::duration<double, std::milli>(now - step).count();
                if (ms > 20)
                    BOOST_TEST_MESSAGE(what << " took " << ms << " ms");
                step = now;
            };
            for (auto& [client, server] : victims) {
                client.shutdown(corio::stream::shutdown_send);
                lap("shutdown");
                client.close();
                server.close();
                lap("close of a pair");
            }
            listener->close();
            lap("close of the listener");
            corio::acceptor fresh(executor, corio::test::any_port_endpoint(),
                                  corio::test::transport_under_test());
            lap("a new listener");
            corio::stream client(executor, corio::test::transport_under_test());
            co_await (fresh.async_accept(asio::use_awaitable) &&
                      client.async_connect(fresh.local_endpoint(), asio::use_awaitable));
            lap("accept and connect");
            client.close();
            lap("close of the new client");
            // The calls above ran in the background; let them take their
            // time while the pings go on.
            co_await sleep_for(3 * delay);
            closed = true;
            stop = true;
        },
        [](std::exception_ptr e) {
            if (e)
                std::rethrow_exception(e);
        });
    co_await ping_until(ping_a, ping_b, stop, during, 10);
    BOOST_TEST_REQUIRE(closed);
    co_await expect_background_jobs_finished(60s);

    const long slowed = slowed_calls() - calls_before;
    BOOST_TEST_MESSAGE("injected delay " << delay.count() << " ms per call, " << slowed
                                         << " calls slowed; round trips before: median "
                                         << before.median() << " ms, worst " << before.worst()
                                         << " ms; during: " << during.ms.size() << ", median "
                                         << during.median() << " ms, worst " << during.worst()
                                         << " ms");
    // Four shutdowns, nine closes (eight victims' ends, the listener), the
    // fresh client's close: all slowed, none on this thread.
    BOOST_TEST(slowed >= 14);
    // The bound: half the injected delay. One slowed call on this thread
    // would make some round trip take at least the whole delay.
    BOOST_TEST(during.worst() < delay.count() / 2.0,
               "worst round trip " << during.worst() << " ms during the closes");
}

CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(close_unmaps_every_region_before_it_returns, 120s) {
    auto executor = co_await asio::this_coro::executor;
    const auto transport = corio::test::transport_under_test();
    corio::acceptor acceptor(executor);
    acceptor.open(transport);
    acceptor.set_option(corio::socket_base::iomap_size(1));
    acceptor.bind(corio::test::any_port_endpoint());
    acceptor.listen();
    corio::stream client(executor);
    client.open(transport);
    client.set_option(corio::socket_base::iomap_size(1));
    corio::stream server = co_await (acceptor.async_accept(asio::use_awaitable) &&
                                     client.async_connect(acceptor.local_endpoint(),
                                                          asio::use_awaitable));

    constexpr std::size_t window = 4096;
    std::vector<unsigned char> region(window, 0);
    corio::iomap_registration registration(server, asio::buffer(region));
    BOOST_TEST_REQUIRE(registration.is_mapped());
    // The mapping reaches the client with the server's next send.
    co_await asio::async_write(server, asio::buffer("m", 1), asio::use_awaitable);
    std::array<char, 1> hello{};
    co_await asio::async_read(client, asio::buffer(hello), asio::use_awaitable);
    client.add_remote_mapping(registration.offset(), window);

    // Proof that the mapping works: an iowrite lands.
    std::vector<unsigned char> data(256, 0xa5);
    co_await client.async_iowrite(asio::buffer(data), registration.offset(), asio::use_awaitable);
    co_await asio::async_write(client, asio::buffer("n", 1), asio::use_awaitable);
    co_await asio::async_read(server, asio::buffer(hello), asio::use_awaitable);
    BOOST_TEST_REQUIRE(std::all_of(region.begin(), region.begin() + 256,
                                   [](unsigned char b) { return b == 0xa5; }));
    std::fill(region.begin(), region.end(), 0);

    // close() returns before the (slowed) rclose has run; the region must
    // already be gone for the peer: its iowrite there lands nowhere.
    server.close();
    auto [ec, n] = co_await client.async_iowrite(asio::buffer(data), registration.offset(),
                                                 asio::as_tuple(asio::use_awaitable));
    BOOST_TEST_MESSAGE("iowrite after the peer's close: " << ec.message() << ", " << n
                                                          << " bytes reported");
    co_await sleep_for(2 * injected_delay());
    BOOST_TEST(std::all_of(region.begin(), region.end(), [](unsigned char b) { return b == 0; }),
               "a peer's iowrite reached a region after close() returned");
    // The registration knows its socket is closed: reset does nothing.
    BOOST_TEST(!registration.reset());
    client.close();
    co_await expect_background_jobs_finished(60s);
}

CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(a_shutdown_never_runs_beside_its_sockets_own_io, 120s) {
    const auto delay = injected_delay();
    auto [a, b] = co_await corio::test::make_stream_pair();
    const long beside_before = calls_beside_shutdown();

    // A read waits on `a` (in rpoll) when its shutdown starts; data for it
    // arrives while the (slowed) shutdown runs.
    std::array<char, 16> buf{};
    bool read_done = false;
    error_code read_ec;
    std::size_t read_n = 0;
    a.async_read_some(asio::buffer(buf), [&](error_code ec, std::size_t n) {
        read_ec = ec;
        read_n = n;
        read_done = true;
    });
    co_await sleep_for(50ms);
    a.shutdown(corio::stream::shutdown_send);
    // Another write on `a` after its send side is shut down, and reads on
    // `b`, also wait their turn or fail cleanly; `b` sends meanwhile.
    co_await asio::async_write(b, asio::buffer("during", 6), asio::use_awaitable);
    co_await sleep_for(delay / 2);
    BOOST_TEST(!read_done, "the read ran while the shutdown was under way");
    co_await sleep_for(delay);
    const auto deadline = clock_type::now() + 30s;
    while (!read_done && clock_type::now() < deadline)
        co_await sleep_for(5ms);
    BOOST_TEST_REQUIRE(read_done);
    BOOST_TEST(!read_ec, read_ec.message());
    BOOST_TEST(std::string(buf.data(), read_n) == "during");
    // The shutdown did its job: `b` reads the end of `a`'s stream.
    auto [eof, n] = co_await b.async_read_some(asio::buffer(buf), asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((eof == asio::error::eof), eof.message());
    BOOST_TEST(calls_beside_shutdown() - beside_before == 0,
               "I/O calls on a socket while its shutdown ran");
}
