// wire_peer: one end of a two-host test (test/softroce/hosts/*.sh), run in
// each guest of hosts-run with corio over rsockets; the other end runs the
// same program with the other role.
//
//   wire_peer echo listen|connect ADDRESS PORT STREAMS BYTES
//       connect opens STREAMS streams at once; each writes BYTES of a
//       pattern while reading its echo, which must match byte for byte.
//       listen echoes every stream it accepts until EOF, and exits once
//       STREAMS of them have ended in an orderly EOF.
//   wire_peer push listen|connect ADDRESS PORT BYTES
//       connect sends BYTES of a pattern on a plain stream; listen receives
//       and checks them and prints the throughput.
//   wire_peer zc-push listen|connect ADDRESS PORT BYTES
//       the same through the zero-copy channel (connect sends).
//       Both push modes watch their stream with corio::stall_timeout
//       (CORIO_PUSH_STALL seconds, default 120): a transfer that stops ends
//       there, saying how far it got and whether the receiver's rsocket held
//       unread bytes (corio missed a wake) or none (the transport stopped).
//   wire_peer hold connect ADDRESS PORT STREAMS STALL KEEPALIVE FAULT [RECOVER]
//       against "echo listen": STREAMS streams (with keep-alive probes every
//       KEEPALIVE seconds, 0: none, and corio::stall_timeout of STALL
//       seconds) each keep a write and a read pending; once data flows, runs
//       the shell command FAULT (it cuts the wire or kills the peer), and
//       every pending operation must end with an error (timed_out, the
//       stall timeout's: under Soft-RoCE nothing below corio ends them, see
//       doc/testing.md) within STALL + 10 s of FAULT's return. Any still
//       pending then are cancelled so that the test ends, and fail it. Then,
//       if given, runs RECOVER and echoes 1 MiB on a new stream.
//
// A push that stalls or misses its EOF also prints this host's queue pairs
// and the process's thread stacks (show_transport_state). Every mode but
// hold ends only once corio's background closes have run (end_process).
//
// CORIO_TEST_POLL_MODE=thread|busy chooses the poll mode (default thread).
// Exit: 0 pass, 1 fail (the reason on stderr), 2 usage.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <unistd.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/asio/experimental/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <corio/acceptor.hpp>
#include <corio/detail/background_closer.hpp>
#include <corio/rpoll_service.hpp>
#include <corio/socket_base.hpp>
#include <corio/stall_timeout.hpp>
#include <corio/stream.hpp>
#include <corio/zero_copy_channel.hpp>

namespace asio = boost::asio;
using asio::use_awaitable;
using clock_type = std::chrono::steady_clock;
using namespace asio::experimental::awaitable_operators;
constexpr auto as_tuple_awaitable = asio::experimental::as_tuple(use_awaitable);

namespace {

constexpr std::size_t chunk_size = 64 * 1024;

// The byte at OFFSET of stream SEED: no period that a chunk size or a slot
// could line up with, so a lost, doubled or misplaced block shows.
unsigned char pattern(std::uint64_t offset, unsigned seed) {
    const std::uint64_t x = offset ^ (offset >> 13) ^ (std::uint64_t{seed} * 0x9e3779b9u);
    return static_cast<unsigned char>(x * 31 + 7);
}

void fill(std::vector<unsigned char>& buffer, std::size_t n, std::uint64_t offset, unsigned seed) {
    for (std::size_t i = 0; i < n; ++i)
        buffer[i] = pattern(offset + i, seed);
}

std::uint64_t count_wrong(const unsigned char* data, std::size_t n, std::uint64_t offset,
                          unsigned seed) {
    std::uint64_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i)
        wrong += data[i] != pattern(offset + i, seed);
    return wrong;
}

double seconds_since(clock_type::time_point t) {
    return std::chrono::duration<double>(clock_type::now() - t).count();
}

struct options {
    std::string mode, role;
    asio::ip::tcp::endpoint endpoint;
    unsigned streams = 1;
    std::uint64_t bytes = 0;
    double stall = 0;
    unsigned keepalive = 0;
    std::string fault, recover;
};

int failures = 0;
void fail(const char* what, const std::string& why) {
    std::fprintf(stderr, "wire_peer: %s: %s\n", what, why.c_str());
    ++failures;
}

// Ends the process with STATUS, with _Exit: the streams a fault broke (hold
// mode's, an echo server's cut sessions) are still open or still closing,
// and their teardown is not what this program tests.
//
// _Exit skips the atexit handler in which corio waits for the background
// closes, so this waits for them first, when FINISH_CLOSES says so: the
// close of a stream that ended in order is what tells its peer EOF (an
// rclose sends rsockets' disconnect message, and the RC connection resends
// it until the peer acknowledges it). A process that ended before its
// rclose had run, or while the message was lost on the wire, left its peer
// waiting for an EOF: the DREQ the kernel sends for the dying process's
// connection goes once, and CI's lossy wire dropped it (hosts_lossy failed
// so, after every byte had arrived).
[[noreturn]] void end_process(int status, bool finish_closes) {
    constexpr std::chrono::seconds close_grace{30};
    if (finish_closes) {
        const auto deadline = clock_type::now() + close_grace;
        while (corio::detail::background_jobs_pending() > 0 && clock_type::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (const std::size_t left = corio::detail::background_jobs_pending(); left > 0)
            std::fprintf(stderr, "wire_peer: %zu closes still running after %lld s; exiting\n", left,
                         static_cast<long long>(close_grace.count()));
    }
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(status);
}

// --- echo -------------------------------------------------------------------
asio::awaitable<bool> echo_session(corio::stream s) {
    std::vector<unsigned char> buffer(chunk_size);
    for (;;) {
        auto [ec, n] = co_await s.async_read_some(asio::buffer(buffer),
                                                  as_tuple_awaitable);
        if (ec == asio::error::eof)
            co_return true;
        if (ec) {
            std::fprintf(stderr, "wire_peer: echo session ended: %s\n", ec.message().c_str());
            co_return false;
        }
        auto [wec, w] = co_await asio::async_write(s, asio::buffer(buffer.data(), n),
                                                   as_tuple_awaitable);
        if (wec) {
            std::fprintf(stderr, "wire_peer: echo session ended: %s\n", wec.message().c_str());
            co_return false;
        }
    }
}

// Ends the process once STREAMS sessions have ended in an orderly EOF:
// sessions cut by a fault may never end at all (nothing to send, nothing
// to time out), and the test is over once the ones it needs are done.
asio::awaitable<void> echo_listen(const options& o) {
    auto ex = co_await asio::this_coro::executor;
    corio::acceptor acceptor(ex, o.endpoint, corio::transport::rsocket);
    std::printf("listening on %s port %u\n", o.endpoint.address().to_string().c_str(),
                o.endpoint.port());
    std::fflush(stdout);
    auto clean = std::make_shared<unsigned>(0);
    for (;;) {
        corio::stream s = co_await acceptor.async_accept(use_awaitable);
        asio::co_spawn(ex, echo_session(std::move(s)),
                       [clean, want = o.streams](std::exception_ptr e, bool orderly) {
                           if (e || !orderly)
                               return;
                           if (++*clean == want) {
                               std::printf("echoed %u streams to EOF\n", want);
                               end_process(0, true);
                           }
                       });
    }
}

asio::awaitable<void> echo_one(const options& o, unsigned seed, std::uint64_t bytes) {
    auto ex = co_await asio::this_coro::executor;
    corio::stream s(ex, corio::transport::rsocket);
    co_await s.async_connect(o.endpoint, use_awaitable);
    auto writer = [&]() -> asio::awaitable<void> {
        std::vector<unsigned char> buffer(chunk_size);
        for (std::uint64_t off = 0; off < bytes;) {
            const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk_size, bytes - off));
            fill(buffer, n, off, seed);
            co_await asio::async_write(s, asio::buffer(buffer.data(), n), use_awaitable);
            off += n;
        }
        s.shutdown(corio::stream::shutdown_send);
    };
    auto reader = [&]() -> asio::awaitable<std::uint64_t> {
        std::vector<unsigned char> buffer(chunk_size);
        std::uint64_t off = 0, wrong = 0;
        for (;;) {
            auto [ec, n] = co_await s.async_read_some(asio::buffer(buffer), as_tuple_awaitable);
            if (ec == asio::error::eof)
                break;
            if (ec)
                throw boost::system::system_error(ec, "reading the echo");
            wrong += count_wrong(buffer.data(), n, off, seed);
            off += n;
        }
        if (off != bytes || wrong != 0)
            fail("echo", "stream " + std::to_string(seed) + ": " + std::to_string(off) + " of " +
                             std::to_string(bytes) + " bytes back, " + std::to_string(wrong) + " wrong");
        co_return off;
    };
    co_await (writer() && reader());
}

asio::awaitable<void> echo_connect(const options& o) {
    auto ex = co_await asio::this_coro::executor;
    const auto start = clock_type::now();
    auto left = std::make_shared<unsigned>(o.streams);
    asio::steady_timer done(ex, clock_type::time_point::max());
    for (unsigned i = 0; i < o.streams; ++i)
        asio::co_spawn(ex, echo_one(o, i, o.bytes), [&, left, i](std::exception_ptr e) {
            if (e) {
                try {
                    std::rethrow_exception(e);
                } catch (const std::exception& x) {
                    fail("echo", "stream " + std::to_string(i) + ": " + x.what());
                }
            }
            if (--*left == 0)
                done.cancel();
        });
    co_await done.async_wait(as_tuple_awaitable);
    std::printf("echo: %u streams x %llu bytes, %d failed, %.2f s\n", o.streams,
                static_cast<unsigned long long>(o.bytes), failures, seconds_since(start));
}

// --- push ---------------------------------------------------------------------
// No byte in this long ends a push with timed_out (CORIO_PUSH_STALL seconds
// overrides it). Under CI's lossy wire a lost last packet waits for rxe's
// ACK timeout (well under a second), and a 32 MiB push took 15-30 s in all;
// a stall once held a push until the 600 s step timeout, with nothing to
// tell where it stopped.
std::chrono::seconds push_stall{120};

// Shows this host's queue pairs as rxe sees them, when a push has stopped:
// a connection's state (RTS: still trying; ERR: given up) and its send and
// receive sequence numbers say whether the transport stopped or corio did.
// The peer may be gone by then; its queue pairs went with its process.
// Then where each of this process's threads is (gdb, when there is one):
// a background rshutdown or rclose still in librdmacm shows there.
void show_transport_state() {
    std::fflush(stdout);
    std::fflush(stderr);
    const std::string command =
        "timeout 10 rdma resource show qp; timeout 10 rdma statistic show link; "
        "if command -v gdb >/dev/null; then timeout 120 gdb -p " + std::to_string(::getpid()) +
        " -batch -nx -ex 'thread apply all bt' 2>&1 | grep -E '^(Thread|#)'; fi";
    if (std::system(command.c_str()) != 0)
        std::fputs("wire_peer: showing the queue pairs and threads failed\n", stderr);
}

// Shows a push receiver's queue pairs just before it closes: should the
// sender then miss the EOF, its own queue pair's rq-psn against this one's
// sq-psn says whether one of this side's last packets was lost for good
// (doc/testing.md, "What ends a pending operation when the peer is gone").
void show_queue_pairs_before_close() {
    std::printf("receiver's queue pairs before its close:\n");
    std::fflush(stdout);
    if (std::system("timeout 10 rdma resource show qp") != 0)
        std::fputs("wire_peer: rdma resource show qp failed\n", stderr);
}

// Says how far a stalled push got, and whether the bytes were there to read.
void report_stall(const char* what, corio::stream& s, std::uint64_t got, std::uint64_t want) {
    boost::system::error_code ec;
    const std::size_t unread = s.available(ec);
    show_transport_state();
    fail(what, "no byte for " + std::to_string(push_stall.count()) + " s after " +
                   std::to_string(got) + " of " + std::to_string(want) + " bytes; " +
                   (ec ? "available() failed: " + ec.message()
                    : unread > 0 ? "the rsocket holds " + std::to_string(unread) +
                                       " unread bytes: corio missed a wake"
                                 : std::string("the rsocket holds none: the transport stopped")));
}

void report_received(const char* what, std::uint64_t got, std::uint64_t want, std::uint64_t wrong,
                     clock_type::time_point start) {
    const double s = seconds_since(start);
    std::printf("%s: received %llu of %llu bytes, %llu wrong, %.2f s, %.2f MiB/s\n", what,
                static_cast<unsigned long long>(got), static_cast<unsigned long long>(want),
                static_cast<unsigned long long>(wrong), s, static_cast<double>(got) / 1048576.0 / s);
    if (got != want || wrong != 0)
        fail(what, "the data did not arrive whole");
}

asio::awaitable<void> push_listen(const options& o) {
    auto ex = co_await asio::this_coro::executor;
    corio::acceptor acceptor(ex, o.endpoint, corio::transport::rsocket);
    std::printf("listening on %s port %u\n", o.endpoint.address().to_string().c_str(), o.endpoint.port());
    std::fflush(stdout);
    corio::stream s = co_await acceptor.async_accept(use_awaitable);
    s.set_option(corio::stall_timeout(push_stall));
    const auto start = clock_type::now();
    std::vector<unsigned char> buffer(chunk_size);
    std::uint64_t off = 0, wrong = 0;
    for (;;) {
        auto [ec, n] = co_await s.async_read_some(asio::buffer(buffer), as_tuple_awaitable);
        if (ec == asio::error::eof)
            break;
        if (ec == asio::error::timed_out) {
            report_stall("push", s, off, o.bytes);
            co_return;
        }
        if (ec)
            throw boost::system::system_error(ec, "receiving");
        wrong += count_wrong(buffer.data(), n, off, 1);
        off += n;
    }
    report_received("push", off, o.bytes, wrong, start);
    show_queue_pairs_before_close();
}

asio::awaitable<void> push_connect(const options& o) {
    auto ex = co_await asio::this_coro::executor;
    corio::stream s(ex, corio::transport::rsocket);
    co_await s.async_connect(o.endpoint, use_awaitable);
    s.set_option(corio::stall_timeout(push_stall));
    std::vector<unsigned char> buffer(chunk_size);
    for (std::uint64_t off = 0; off < o.bytes;) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk_size, o.bytes - off));
        fill(buffer, n, off, 1);
        auto [ec, written] = co_await asio::async_write(s, asio::buffer(buffer.data(), n), as_tuple_awaitable);
        if (ec) {
            fail("push", "sending after " + std::to_string(off + written) + " of " +
                             std::to_string(o.bytes) + " bytes: " + ec.message());
            co_return;
        }
        off += n;
    }
    s.shutdown(corio::stream::shutdown_send);
    // Wait for the receiver's close, so that no data is still in flight
    // when this end goes.
    unsigned char b;
    auto [ec, n] = co_await s.async_read_some(asio::buffer(&b, 1), as_tuple_awaitable);
    (void)n;
    if (ec != asio::error::eof) {
        show_transport_state();
        fail("push", "expected the receiver's EOF, got: " + ec.message());
    }
    std::printf("push: sent %llu bytes\n", static_cast<unsigned long long>(o.bytes));
}

asio::awaitable<void> zc_listen(const options& o) {
    auto ex = co_await asio::this_coro::executor;
    corio::acceptor acceptor(ex);
    acceptor.open(corio::transport::rsocket, o.endpoint.protocol());
    acceptor.set_option(corio::socket_base::iomap_size(1));
    acceptor.bind(o.endpoint);
    acceptor.listen();
    std::printf("listening on %s port %u\n", o.endpoint.address().to_string().c_str(), o.endpoint.port());
    std::fflush(stdout);
    {
        corio::zero_copy_receiver rx(co_await acceptor.async_accept(use_awaitable),
                                     {.slot_count = 8, .slot_size = 64 * 1024});
        rx.next_layer().set_option(corio::stall_timeout(push_stall));
        co_await rx.async_handshake(use_awaitable);
        const auto start = clock_type::now();
        std::uint64_t off = 0, wrong = 0;
        for (;;) {
            auto [ec, m] = co_await rx.async_receive(as_tuple_awaitable);
            if (ec == asio::error::timed_out) {
                report_stall("zc-push", rx.next_layer(), off, o.bytes);
                co_return;
            }
            if (ec)
                throw boost::system::system_error(ec, "receiving");
            if (m.size() == 0)
                break;
            wrong += count_wrong(reinterpret_cast<const unsigned char*>(m.data()), m.size(), off, 2);
            off += m.size();
        }
        report_received("zc-push", off, o.bytes, wrong, start);
        show_queue_pairs_before_close();
    }
}

asio::awaitable<void> zc_connect(const options& o) {
    auto ex = co_await asio::this_coro::executor;
    corio::stream s(ex);
    s.open(corio::transport::rsocket, o.endpoint.protocol());
    s.set_option(corio::socket_base::iomap_size(1));
    co_await s.async_connect(o.endpoint, use_awaitable);
    s.set_option(corio::stall_timeout(push_stall));
    corio::zero_copy_sender tx(std::move(s));
    co_await tx.async_handshake(use_awaitable);
    std::vector<unsigned char> chunk(tx.slot_size());
    for (std::uint64_t off = 0; off <= o.bytes;) {
        // The last message is the empty one that ends the push.
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), o.bytes - off));
        fill(chunk, n, off, 2);
        auto [ec, sent] = co_await tx.async_send(asio::buffer(chunk.data(), n), as_tuple_awaitable);
        (void)sent;
        if (ec) {
            show_transport_state();
            fail("zc-push", "sending after " + std::to_string(off) + " of " + std::to_string(o.bytes) +
                                " bytes: " + ec.message());
            co_return;
        }
        if (n == 0)
            break;
        off += n;
    }
    // Completes once the receiver has closed its end.
    if (auto [ec] = co_await tx.async_shutdown(as_tuple_awaitable); ec) {
        show_transport_state();
        fail("zc-push", "expected the receiver's close, got: " + ec.message());
        co_return;
    }
    std::printf("zc-push: sent %llu bytes\n", static_cast<unsigned long long>(o.bytes));
}

// --- hold -----------------------------------------------------------------------
struct hold_state {
    clock_type::time_point fault_started{};
    bool fault_on = false;
    std::uint64_t echoed = 0;
    unsigned ended = 0, ended_with_error = 0, timed_out = 0, cancelled = 0;
    double first = -1;
    /// Per stream, when a read or write of it last moved bytes.
    std::vector<clock_type::time_point> last_byte;
    double latest = 0;
};

asio::awaitable<void> keep_writing(corio::stream& s, unsigned seed, std::shared_ptr<hold_state> st) {
    std::vector<unsigned char> buffer(chunk_size);
    for (std::uint64_t off = 0;; off += chunk_size) {
        fill(buffer, chunk_size, off, seed);
        co_await asio::async_write(s, asio::buffer(buffer), use_awaitable);
        st->last_byte[seed] = clock_type::now();
    }
}

asio::awaitable<void> keep_reading(corio::stream& s, unsigned stream, std::shared_ptr<hold_state> st) {
    std::vector<unsigned char> buffer(chunk_size);
    for (;;) {
        st->echoed += co_await s.async_read_some(asio::buffer(buffer), use_awaitable);
        st->last_byte[stream] = clock_type::now();
    }
}

// Runs COMMAND with sh -c on a thread of its own, so that the context goes
// on polling meanwhile; returns its wait status.
asio::awaitable<int> run_command(const std::string& command) {
    auto ex = co_await asio::this_coro::executor;
    auto status = std::make_shared<std::atomic<int>>(-1);
    auto finished = std::make_shared<std::atomic<bool>>(false);
    std::thread([command, status, finished] {
        *status = std::system(command.c_str());
        *finished = true;
    }).detach();
    asio::steady_timer tick(ex);
    while (!*finished) {
        tick.expires_after(std::chrono::milliseconds(20));
        co_await tick.async_wait(use_awaitable);
    }
    co_return status->load();
}

asio::awaitable<void> hold_connect(const options& o) {
    auto ex = co_await asio::this_coro::executor;
    auto st = std::make_shared<hold_state>();
    std::vector<std::unique_ptr<corio::stream>> streams;
    for (unsigned i = 0; i < o.streams; ++i) {
        streams.push_back(std::make_unique<corio::stream>(ex, corio::transport::rsocket));
        co_await streams.back()->async_connect(o.endpoint, use_awaitable);
        // Without outstanding work a reliable connection never notices that
        // its peer has gone: the probes are that work (doc/testing.md).
        if (o.keepalive != 0)
            streams.back()->set_option(
                corio::socket_base::keep_alive(true, std::chrono::seconds(o.keepalive)));
        // What ends the pending operations once the peer is gone.
        streams.back()->set_option(corio::stall_timeout(
            std::chrono::milliseconds(static_cast<long long>(o.stall * 1000))));
    }
    auto record = [st](unsigned stream, const char* what) {
        return [st, stream, what](std::exception_ptr e) {
            ++st->ended;
            std::string why = "ended without an error";
            if (e) {
                try {
                    std::rethrow_exception(e);
                } catch (const boost::system::system_error& x) {
                    why = x.what();
                    st->cancelled += x.code() == asio::error::operation_aborted;
                    st->timed_out += x.code() == asio::error::timed_out;
                } catch (const std::exception& x) {
                    why = x.what();
                }
                ++st->ended_with_error;
            }
            const double t = st->fault_on ? seconds_since(st->fault_started) : -1;
            st->latest = std::max(st->latest, t);
            if (st->first < 0 || t < st->first)
                st->first = t;
            const double last = st->fault_on
                                    ? std::chrono::duration<double>(st->last_byte[stream] -
                                                                    st->fault_started)
                                          .count()
                                    : -1;
            std::printf("stream %u: pending %s: %s, %.2f s after the fault (its last byte %.2f s "
                        "after)\n",
                        stream, what, why.c_str(), t, last);
            std::fflush(stdout);
        };
    };
    // A coroutine each, so that one operation's error does not cancel the
    // other: each pending operation must end by itself.
    std::vector<asio::cancellation_signal> cancel(2 * o.streams);
    st->last_byte.assign(o.streams, clock_type::now());
    for (unsigned i = 0; i < o.streams; ++i) {
        asio::co_spawn(ex, keep_writing(*streams[i], i, st),
                       asio::bind_cancellation_slot(cancel[2 * i].slot(), record(i, "write")));
        asio::co_spawn(ex, keep_reading(*streams[i], i, st),
                       asio::bind_cancellation_slot(cancel[2 * i + 1].slot(), record(i, "read")));
    }
    asio::steady_timer tick(ex);
    const auto flow_deadline = clock_type::now() + std::chrono::seconds(120);
    while (st->echoed < (std::uint64_t{1} << 20) && st->ended == 0 && clock_type::now() < flow_deadline) {
        tick.expires_after(std::chrono::milliseconds(20));
        co_await tick.async_wait(use_awaitable);
    }
    if (st->echoed < (std::uint64_t{1} << 20) || st->ended != 0) {
        fail("hold", "data did not flow before the fault");
        co_return;
    }
    std::printf("hold: %u streams flowing (%llu bytes echoed), fault: %s\n", o.streams,
                static_cast<unsigned long long>(st->echoed), o.fault.c_str());
    std::fflush(stdout);
    st->fault_started = clock_type::now();
    st->fault_on = true;
    if (const int rc = co_await run_command(o.fault); rc != 0) {
        fail("hold", "the fault command failed: " + o.fault);
        co_return;
    }
    // The fault takes effect before its command returns, and the command
    // took 1.5 to 7 s on a busy host: the bound counts from its return.
    const double applied = seconds_since(st->fault_started);
    std::printf("hold: fault applied %.2f s after it started\n", applied);
    const unsigned pending = 2 * o.streams;
    auto wait_until = [&](double limit) -> asio::awaitable<void> {
        while (st->ended < pending && seconds_since(st->fault_started) < limit) {
            tick.expires_after(std::chrono::milliseconds(20));
            co_await tick.async_wait(use_awaitable);
        }
    };
    const double bound = applied + o.stall + 10;
    co_await wait_until(bound);
    const unsigned by_stall = st->timed_out;
    std::printf("hold: %u of %u pending operations ended with timed_out (stall timeout %.1f s), "
                "the first %.2f s and the last %.2f s after the fault started, %.2f s after it "
                "was applied\n",
                by_stall, pending, o.stall, st->first, st->latest, st->latest - applied);
    if (st->ended < pending) {
        fail("hold", std::to_string(pending - st->ended) + " operations still pending " +
                         std::to_string(bound) + " s after the fault: cancelling them");
        for (auto& c : cancel)
            c.emit(asio::cancellation_type::terminal);
        co_await wait_until(bound + 10);
    }
    if (st->ended_with_error != pending)
        fail("hold", std::to_string(pending - st->ended_with_error) +
                         " pending operations did not end with an error");
    if (o.recover.empty() || failures != 0)
        co_return;
    if (co_await run_command(o.recover) != 0) {
        fail("hold", "the recovery command failed: " + o.recover);
        co_return;
    }
    const auto start = clock_type::now();
    co_await echo_one(o, 1000, std::uint64_t{1} << 20);
    std::printf("hold: a new stream echoed 1 MiB after the recovery, %.2f s\n", seconds_since(start));
}

int usage() {
    std::fputs("usage: wire_peer echo listen|connect ADDRESS PORT STREAMS BYTES\n"
               "       wire_peer push|zc-push listen|connect ADDRESS PORT BYTES\n"
               "       wire_peer hold connect ADDRESS PORT STREAMS STALL KEEPALIVE FAULT [RECOVER]\n",
               stderr);
    return 2;
}

}  // namespace

int main(int argc, char** argv) try {
    if (argc < 5)
        return usage();
    options o;
    o.mode = argv[1];
    o.role = argv[2];
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(argv[3], ec);
    const long port = std::strtol(argv[4], nullptr, 10);
    if (ec || port <= 0 || port > 65535 || (o.role != "listen" && o.role != "connect"))
        return usage();
    o.endpoint = {address, static_cast<unsigned short>(port)};
    std::vector<std::string_view> rest(argv + 5, argv + argc);
    auto number = [](std::string_view v) { return std::strtoull(std::string(v).c_str(), nullptr, 10); };
    if (o.mode == "echo" && rest.size() == 2) {
        o.streams = static_cast<unsigned>(number(rest[0]));
        o.bytes = number(rest[1]);
    } else if ((o.mode == "push" || o.mode == "zc-push") && rest.size() == 1) {
        o.bytes = number(rest[0]);
    } else if (o.mode == "hold" && o.role == "connect" && (rest.size() == 4 || rest.size() == 5)) {
        o.streams = static_cast<unsigned>(number(rest[0]));
        o.stall = static_cast<double>(number(rest[1]));
        o.keepalive = static_cast<unsigned>(number(rest[2]));
        o.fault = rest[3];
        if (rest.size() == 5)
            o.recover = rest[4];
    } else {
        return usage();
    }
    if (o.streams == 0)
        return usage();

    if (const char* stall = std::getenv("CORIO_PUSH_STALL"); stall != nullptr && *stall != '\0') {
        const long long seconds = std::strtoll(stall, nullptr, 10);
        if (seconds <= 0) {
            std::fputs("wire_peer: CORIO_PUSH_STALL must be a positive number of seconds\n", stderr);
            return 2;
        }
        push_stall = std::chrono::seconds(seconds);
    }

    asio::io_context context;
    const char* mode = std::getenv("CORIO_TEST_POLL_MODE");
    corio::set_poll_mode(context, mode != nullptr && std::string_view(mode) == "busy"
                                      ? corio::poll_mode::busy
                                      : corio::poll_mode::thread);
    const bool listen = o.role == "listen";
    asio::awaitable<void> (*body)(const options&) =
        o.mode == "echo"      ? (listen ? echo_listen : echo_connect)
        : o.mode == "push"    ? (listen ? push_listen : push_connect)
        : o.mode == "zc-push" ? (listen ? zc_listen : zc_connect)
                              : hold_connect;
    asio::co_spawn(context, body(o), [body](std::exception_ptr e) {
        if (e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                fail("error", x.what());
            }
        }
        // The hold mode's broken streams are closing now, and may never
        // finish: it does not wait for them.
        end_process(failures == 0 ? 0 : 1, body != hold_connect);
    });
    context.run();
    return failures == 0 ? 0 : 1;
} catch (const std::exception& e) {
    std::fprintf(stderr, "wire_peer: %s\n", e.what());
    return 1;
}
