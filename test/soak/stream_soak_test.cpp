#define BOOST_TEST_MODULE stream_soak
#include <boost/test/unit_test.hpp>

// A bounded soak of streams and acceptors: rounds of many listeners at once,
// connect/transfer/close churn, closes in the middle of transfers,
// cancellations and closes from another thread, and peers in processes of
// their own killed with SIGKILL mid-transfer. It passes when the process
// survives (no crash), every operation completes within a bound (else a
// watchdog names the ones that did not and fails the run), and after a
// warm-up round neither the descriptor count (/proc/self/fd) nor the
// resident memory (RSS) grows beyond the tolerance printed at the end.
//
// Sized by the environment (defaults: tcp / rsocket):
//   CORIO_SOAK_SECONDS      no new round starts after this     (20 / 30)
//   CORIO_SOAK_ROUNDS       at most this many rounds, at least 3,
//                           the first a warm-up                (100 / 20)
//   CORIO_SOAK_LISTENERS    acceptors listening at once        (16 / 8)
//   CORIO_SOAK_CONNECTIONS  connections per acceptor a round   (4 / 2)
//   CORIO_SOAK_KILLED_PEERS peers killed a round               (2 / 1)

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <malloc.h>
#include <sanitizer/common_interface_defs.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <corio/acceptor.hpp>
#include <corio/detail/background_closer.hpp>
#include <corio/stream.hpp>
#include <corio/transport.hpp>

#include "coroutine_test.hpp"
#include "primed_rsocket_services.hpp"
#include "transport_under_test.hpp"

CORIO_TEST_PRIMED_TRANSPORT_FIXTURE();

namespace {

/// Set before the fixtures start any thread: glibc gives every thread that
/// allocates an arena of its own (up to 8 per core), and the background
/// closer's workers come and go, so each round could touch new arenas. On
/// rsockets in the guest RSS then climbed from 25 to 42 MiB over 19 rounds
/// without a leak (with two arenas it stayed at 27-28 MiB). Two arenas keep
/// RSS a measure of what the library keeps, not of which threads ran.
struct few_malloc_arenas {
    few_malloc_arenas() { ::mallopt(M_ARENA_MAX, 2); }
};
const few_malloc_arenas arenas_before_any_thread;

} // namespace

namespace asio = boost::asio;
using namespace std::chrono_literals;
using namespace asio::experimental::awaitable_operators;
using boost::system::error_code;
using steady = std::chrono::steady_clock;

extern char** environ;

namespace {

bool on_rsockets() { return corio::test::transport_under_test() == corio::transport::rsocket; }

int setting(const char* name, int tcp_default, int rsocket_default) {
    const char* text = std::getenv(name);
    if (text == nullptr)
        return on_rsockets() ? rsocket_default : tcp_default;
    const int value = std::atoi(text);
    if (value < 1 || value > 4096)
        throw std::invalid_argument(std::string(name) + " must be a number from 1 to 4096");
    return value;
}

#if defined(__has_feature)
#define CORIO_SOAK_HAS_FEATURE(x) __has_feature(x)
#else
#define CORIO_SOAK_HAS_FEATURE(x) 0
#endif

// TSan symbolizes a report's stack to match it against the suppressions
// (test/tsan.supp), and the first time it does, it starts llvm-symbolizer
// with two pipes to it that stay open for the rest of the process.
#if defined(__SANITIZE_THREAD__) || CORIO_SOAK_HAS_FEATURE(thread_sanitizer)
constexpr bool under_thread_sanitizer = true;
#else
constexpr bool under_thread_sanitizer = false;
#endif

// The sanitizers' allocators keep freed memory (ASan's quarantine holds up
// to 256 MiB), so RSS says nothing there; LSan looks for leaks instead.
#if defined(__SANITIZE_ADDRESS__) || CORIO_SOAK_HAS_FEATURE(address_sanitizer)
constexpr bool under_a_sanitizer = true;
#else
constexpr bool under_a_sanitizer = under_thread_sanitizer;
#endif

/// Under TSan, starts its symbolizer now, before the warm-up: on rsockets
/// the first suppressed report (librdmacm's own ordering) can come in any
/// round, and its two pipes would then count as descriptors the round kept.
void start_the_sanitizer_symbolizer() {
    if constexpr (under_thread_sanitizer) {
        char where[256];
        __sanitizer_symbolize_pc(reinterpret_cast<void*>(&start_the_sanitizer_symbolizer), "%f",
                                 where, sizeof where);
    }
}

struct soak_settings {
    std::chrono::seconds duration{setting("CORIO_SOAK_SECONDS", 20, 30)};
    int rounds = std::max(3, setting("CORIO_SOAK_ROUNDS", 100, 20));
    int listeners = setting("CORIO_SOAK_LISTENERS", 16, 8);
    int connections = setting("CORIO_SOAK_CONNECTIONS", 4, 2);
    int killed_peers = setting("CORIO_SOAK_KILLED_PEERS", 2, 1);
    // Connection set-up under TCG emulation takes up to seconds; a healthy
    // operation on tcp takes milliseconds.
    std::chrono::seconds operation_bound = on_rsockets() ? 60s : 15s;
    // glibc keeps freed memory for reuse, and rsockets' registered buffers
    // come and go: a plateau after the warm-up round, not a byte count. On
    // tcp the rounds' RSS stayed within a page of each other. On rsockets in
    // the guest (2026-12-01, 16 to 19 rounds of 30 s runs) the peak was 11
    // to 17 MiB above the warm-up, rising over the first rounds, then
    // going up and down by several MiB (25, 29, 32, 34, 35, 33, 36, 33, 37,
    // 42, 39, 38 MiB): whether a slow growth is hidden in that is an open
    // question (doc/testing.md), so the bound is twice the largest peak seen
    // rather than a claim of none.
    long rss_tolerance_kib = on_rsockets() ? 32 * 1024 : 8 * 1024;
};

/// Names the operations in flight; a watchdog thread ends the run, listing
/// them, when one has waited longer than the bound.
class operation_watch {
public:
    class scope {
    public:
        scope(operation_watch& watch, std::string name) : watch_(&watch) {
            const std::lock_guard lock(watch.mutex_);
            id_ = watch.next_id_++;
            watch.in_flight_.emplace(id_, entry{std::move(name), steady::now()});
        }
        scope(const scope&) = delete;
        scope& operator=(const scope&) = delete;
        ~scope() {
            const std::lock_guard lock(watch_->mutex_);
            watch_->in_flight_.erase(id_);
        }

    private:
        operation_watch* watch_;
        long id_ = 0;
    };

    explicit operation_watch(std::chrono::seconds bound)
        : bound_(bound), watchdog_([this] { watch(); }) {}
    operation_watch(const operation_watch&) = delete;
    operation_watch& operator=(const operation_watch&) = delete;
    ~operation_watch() {
        {
            const std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        watchdog_.join();
    }

    std::size_t in_flight() {
        const std::lock_guard lock(mutex_);
        return in_flight_.size();
    }

private:
    struct entry {
        std::string name;
        steady::time_point started;
    };

    void watch() {
        std::unique_lock lock(mutex_);
        while (!wake_.wait_for(lock, 200ms, [this] { return stopping_; })) {
            const auto now = steady::now();
            int hung = 0;
            for (const auto& [id, e] : in_flight_) {
                if (now - e.started < bound_)
                    continue;
                std::printf("HUNG: %s: not complete after %lld s\n", e.name.c_str(),
                            static_cast<long long>(
                                std::chrono::duration_cast<std::chrono::seconds>(now - e.started)
                                    .count()));
                ++hung;
            }
            if (hung == 0)
                continue;
            std::printf("FAIL: %d hung operation(s) (bound %lld s); aborting for a core\n", hung,
                        static_cast<long long>(bound_.count()));
            std::fflush(stdout);
            // The io_context is stuck: no orderly way out is left. abort()
            // leaves a core, from which test/softroce/guest-run prints
            // every thread's backtrace. Boost.Test's handler would catch
            // the signal and leave no core.
            std::signal(SIGABRT, SIG_DFL);
            std::abort();
        }
    }

    const std::chrono::seconds bound_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::map<long, entry> in_flight_;
    long next_id_ = 0;
    bool stopping_ = false;
    std::thread watchdog_;
};

/// A thread of its own that runs what it is given, in order: where the
/// cancellations and closes "from another thread" come from.
class foreign_thread {
public:
    foreign_thread() : thread_([this] { work(); }) {}
    foreign_thread(const foreign_thread&) = delete;
    foreign_thread& operator=(const foreign_thread&) = delete;
    ~foreign_thread() {
        run({});
        thread_.join();
    }

    /// Queues `job`; an empty job ends the thread.
    void run(std::function<void()> job) {
        {
            const std::lock_guard lock(mutex_);
            jobs_.push_back(std::move(job));
        }
        wake_.notify_one();
    }

private:
    void work() {
        for (;;) {
            std::function<void()> job;
            {
                std::unique_lock lock(mutex_);
                wake_.wait(lock, [this] { return !jobs_.empty(); });
                job = std::move(jobs_.front());
                jobs_.pop_front();
            }
            if (!job)
                return;
            job();
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::function<void()>> jobs_;
    std::thread thread_;
};

/// What a round did, printed after it.
struct round_counts {
    int verified_transfers = 0;
    int closed_mid_transfer = 0;
    int foreign_cancels = 0;
    int foreign_closes = 0;
    int killed_peers = 0;
    int aborted_accepts = 0;
};

struct soak_context {
    const soak_settings& settings;
    operation_watch& watch;
    foreign_thread& foreign;
    round_counts counts;
};

int open_descriptors() {
    int n = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd"))
        ++n;
    return n - 1; // the iterator's own
}

/// What each open descriptor refers to (readlink of /proc/self/fd/N), so a
/// round that keeps descriptors can say which kind it kept.
std::map<int, std::string> descriptor_targets() {
    std::map<int, std::string> targets;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
        const auto target = std::filesystem::read_symlink(entry.path(), ec);
        if (!ec)
            targets[std::stoi(entry.path().filename().string())] = target.string();
    }
    return targets;
}

/// The other processes that hold `target`, a pipe or socket as readlink
/// names it ("pipe:[11435]"), as " (also pid 12 llvm-symbolizer)": a
/// descriptor shared with a child the runtime started is told apart from one
/// corio kept. Other names (an eventfd's "anon_inode:[eventfd]", a path) do
/// not say which object they are, so they get nothing.
std::string other_holders(const std::string& target) {
    const bool names_one_object =
        (target.starts_with("pipe:[") || target.starts_with("socket:[")) && target.ends_with("]");
    if (!names_one_object)
        return {};
    std::string holders;
    const std::string self = std::to_string(::getpid());
    std::error_code ec;
    for (const auto& process : std::filesystem::directory_iterator("/proc", ec)) {
        const std::string pid = process.path().filename().string();
        if (pid == self || pid.find_first_not_of("0123456789") != std::string::npos)
            continue;
        std::error_code fd_ec;
        for (const auto& fd : std::filesystem::directory_iterator(process.path() / "fd", fd_ec)) {
            std::error_code link_ec;
            if (std::filesystem::read_symlink(fd.path(), link_ec).string() != target || link_ec)
                continue;
            std::string name;
            std::getline(std::ifstream(process.path() / "comm"), name);
            holders += (holders.empty() ? " (also pid " : ", pid ") + pid + " " + name;
            break;
        }
    }
    return holders.empty() ? holders : holders + ")";
}

std::string descriptors_added(const std::map<int, std::string>& before,
                              const std::map<int, std::string>& after) {
    std::string added;
    for (const auto& [fd, target] : after) {
        const auto it = before.find(fd);
        if (it == before.end() || it->second != target)
            added += " " + std::to_string(fd) + "->" + target + other_holders(target);
    }
    return added.empty() ? " none" : added;
}

long resident_kib() {
    std::ifstream statm("/proc/self/statm");
    long size = 0;
    long resident = 0;
    statm >> size >> resident;
    return resident * (::sysconf(_SC_PAGESIZE) / 1024);
}

asio::awaitable<void> sleep_for(steady::duration d) {
    asio::steady_timer timer(co_await asio::this_coro::executor, d);
    co_await timer.async_wait(asio::use_awaitable);
}

std::vector<unsigned char> pattern(std::size_t n, unsigned seed) {
    std::vector<unsigned char> v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = static_cast<unsigned char>((i * 131 + seed) >> 2);
    return v;
}

/// What every big write sends: made once, so that the rounds' RSS does not
/// swing with glibc's placing of megabyte buffers.
const std::vector<unsigned char>& big_block() {
    static const auto block = pattern(8 << 20, 3);
    return block;
}

/// One write started with a callback, its result filled in when it ends.
struct write_result {
    bool done = false;
    error_code ec;
};

/// Starts writes of `block` until one is still pending after 20 ms: the
/// peer reads nothing, so the buffers fill. `last` is that write's result
/// slot, which must outlive it. False when every one of 1000 went through.
asio::awaitable<bool> write_until_pending(corio::stream& s, asio::const_buffer block,
                                          write_result& last) {
    for (int i = 0; i < 1000; ++i) {
        last = {};
        s.async_write_some(block, [&last](error_code ec, std::size_t) {
            last.ec = ec;
            last.done = true;
        });
        co_await sleep_for(20ms);
        if (!last.done)
            co_return true;
        if (last.ec)
            co_return false;
    }
    co_return false;
}

/// Waits for a callback's flag; the watch bounds the wait.
asio::awaitable<void> until(const bool& done) {
    while (!done)
        co_await sleep_for(1ms);
}

asio::awaitable<std::pair<corio::stream, corio::stream>>
connect_to(corio::acceptor& acceptor, soak_context& soak, const std::string& name) {
    auto executor = co_await asio::this_coro::executor;
    corio::stream client(executor, corio::test::transport_under_test());
    const operation_watch::scope op(soak.watch, name + ": accept and connect");
    corio::stream server =
        co_await (acceptor.async_accept(asio::use_awaitable) &&
                  client.async_connect(acceptor.local_endpoint(), asio::use_awaitable));
    co_return std::pair(std::move(client), std::move(server));
}

/// 64 KiB each way, verified.
asio::awaitable<void> echo(corio::stream& client, corio::stream& server, soak_context& soak,
                           const std::string& name, unsigned seed) {
    const auto up = pattern(64 * 1024, seed);
    std::vector<unsigned char> at_server(up.size());
    std::vector<unsigned char> back(up.size());
    {
        const operation_watch::scope op(soak.watch, name + ": 64 KiB up");
        co_await (asio::async_write(client, asio::buffer(up), asio::use_awaitable) &&
                  asio::async_read(server, asio::buffer(at_server), asio::use_awaitable));
    }
    {
        const operation_watch::scope op(soak.watch, name + ": 64 KiB back");
        co_await (asio::async_write(server, asio::buffer(at_server), asio::use_awaitable) &&
                  asio::async_read(client, asio::buffer(back), asio::use_awaitable));
    }
    BOOST_TEST_REQUIRE((back == up), name << ": the echoed bytes differ");
    ++soak.counts.verified_transfers;
}

/// The writer's own close() ends its pending write; the peer then reads
/// what arrived, up to the end of the stream or an error.
asio::awaitable<void> close_during_a_write(corio::stream& client, corio::stream& server,
                                           soak_context& soak, const std::string& name) {
    const asio::const_buffer block(big_block().data(), 256 * 1024);
    write_result pending;
    {
        const operation_watch::scope op(soak.watch, name + ": filling the send buffers");
        BOOST_TEST_REQUIRE(co_await write_until_pending(client, block, pending),
                           name << ": no write ever stayed pending");
    }
    client.close();
    {
        const operation_watch::scope op(soak.watch, name + ": a pending write ended by close()");
        co_await until(pending.done);
    }
    std::array<unsigned char, 64 * 1024> sink{};
    const operation_watch::scope op(soak.watch, name + ": reading to the end after the close");
    for (;;) {
        auto [ec, n] = co_await server.async_read_some(asio::buffer(sink),
                                                       asio::as_tuple(asio::use_awaitable));
        if (ec)
            break;
    }
    ++soak.counts.closed_mid_transfer;
}

/// The reader closes while the peer's big write is under way: the write
/// ends, with an error or with what it moved.
asio::awaitable<void> peer_closes_during_a_write(corio::stream& client, corio::stream& server,
                                                 soak_context& soak, const std::string& name) {
    const auto& block = big_block();
    std::array<unsigned char, 4096> some{};
    const operation_watch::scope op(soak.watch, name + ": a write whose reader closes");
    auto writer = [&]() -> asio::awaitable<void> {
        co_await asio::async_write(client, asio::buffer(block), asio::as_tuple(asio::use_awaitable));
    };
    auto closer = [&]() -> asio::awaitable<void> {
        co_await asio::async_read(server, asio::buffer(some), asio::use_awaitable);
        server.close();
    };
    co_await (writer() && closer());
    ++soak.counts.closed_mid_transfer;
}

/// A read that nothing will complete is cancelled through its slot from the
/// foreign thread; then a stream with a pending read is closed from there.
asio::awaitable<void> end_from_another_thread(corio::stream& client, corio::stream& server,
                                              soak_context& soak, const std::string& name) {
    std::array<unsigned char, 64> buf{};
    // Callbacks, not use_awaitable: the reads must be pending (they start
    // in the initiating call) before the other thread acts. Nothing is sent
    // to either, so only that can end them.
    struct read_result {
        bool done = false;
        error_code ec;
    };
    {
        // Shared with the foreign thread, which may still be leaving emit()
        // when the read has completed here.
        auto signal = std::make_shared<asio::cancellation_signal>();
        read_result r;
        const operation_watch::scope op(soak.watch, name + ": a read cancelled from another thread");
        server.async_read_some(asio::buffer(buf),
                               asio::bind_cancellation_slot(signal->slot(),
                                                            [&r](error_code ec, std::size_t) {
                                                                r.ec = ec;
                                                                r.done = true;
                                                            }));
        soak.foreign.run([signal] { signal->emit(asio::cancellation_type::terminal); });
        co_await until(r.done);
        BOOST_TEST((r.ec == asio::error::operation_aborted), name << ": " << r.ec.message());
        ++soak.counts.foreign_cancels;
    }
    {
        read_result r;
        const operation_watch::scope op(soak.watch,
                                        name + ": a read ended by close() from another thread");
        client.async_read_some(asio::buffer(buf), [&r](error_code ec, std::size_t) {
            r.ec = ec;
            r.done = true;
        });
        soak.foreign.run([&client] {
            error_code ignored;
            client.close(ignored);
        });
        co_await until(r.done);
        BOOST_TEST(r.ec.failed(), name << ": the read survived its stream's close");
        ++soak.counts.foreign_closes;
    }
    const operation_watch::scope op(soak.watch, name + ": the peer sees the close");
    auto [ec, n] =
        co_await server.async_read_some(asio::buffer(buf), asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ec.failed(), name << ": the peer read " << n << " bytes from a closed stream");
}

/// One acceptor's share of a round: connections one after another, each
/// going through one of the scenarios.
asio::awaitable<void> churn(corio::acceptor& acceptor, soak_context& soak, int round, int listener) {
    for (int c = 0; c < soak.settings.connections; ++c) {
        const std::string name = "round " + std::to_string(round) + " listener " +
                                 std::to_string(listener) + " connection " + std::to_string(c);
        auto [client, server] = co_await connect_to(acceptor, soak, name);
        switch ((round + listener + c) % 4) {
        case 0:
            co_await echo(client, server, soak, name, static_cast<unsigned>(round * 31 + c));
            break;
        case 1:
            co_await close_during_a_write(client, server, soak, name);
            break;
        case 2:
            co_await peer_closes_during_a_write(client, server, soak, name);
            break;
        default:
            co_await end_from_another_thread(client, server, soak, name);
            break;
        }
    }
}

/// The environment for a peer process: ours, but with a small room in
/// librdmacm's connection service (one socket), so that its start-up does
/// not prime the service for 1024.
std::vector<std::string> peer_environment() {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e)
        if (std::string_view(*e).rfind("CORIO_RSOCKET_CM_CAPACITY=", 0) != 0)
            env.emplace_back(*e);
    env.emplace_back("CORIO_RSOCKET_CM_CAPACITY=8");
    return env;
}

/// A peer in a process of its own connects, says "ready" and is killed
/// with SIGKILL while a write to it is pending behind full buffers.
asio::awaitable<void> kill_a_peer(soak_context& soak, int round, int k) {
    const std::string name = "round " + std::to_string(round) + " killed peer " + std::to_string(k);
    const char* peer_program = std::getenv("CORIO_STREAM_PEER");
    BOOST_TEST_REQUIRE(peer_program != nullptr, "CORIO_STREAM_PEER names the stream_peer program");
    auto executor = co_await asio::this_coro::executor;
    std::optional<operation_watch::scope> opening(std::in_place, soak.watch,
                                                  name + ": opening its listener");
    corio::acceptor acceptor(executor, corio::test::any_port_endpoint(),
                             corio::test::transport_under_test());
    opening.reset();
    const auto where = acceptor.local_endpoint();
    const std::string program(peer_program);
    const std::string transport(corio::to_string(corio::test::transport_under_test()));
    const std::string address = where.address().to_string();
    const std::string port = std::to_string(where.port());
    char* const argv[] = {const_cast<char*>(program.c_str()), const_cast<char*>(transport.c_str()),
                          const_cast<char*>(address.c_str()), const_cast<char*>(port.c_str()),
                          nullptr};
    auto env_strings = peer_environment();
    std::vector<char*> envp;
    for (auto& e : env_strings)
        envp.push_back(e.data());
    envp.push_back(nullptr);
    // posix_spawn, not fork: ThreadSanitizer cannot follow a fork of a
    // multi-threaded process, and the child only execs.
    pid_t child = -1;
    BOOST_TEST_REQUIRE(::posix_spawn(&child, peer_program, nullptr, nullptr, argv, envp.data()) == 0);
    struct reaper {
        pid_t pid;
        bool reaped = false;
        ~reaper() {
            if (reaped)
                return;
            ::kill(pid, SIGKILL);
            int status = 0;
            ::waitpid(pid, &status, 0);
        }
    } reap{child};
    // A peer that gives up (its connect refused) must not leave the accept
    // waiting for the watchdog: the accept races the child's exit.
    auto exit_of_the_peer = [&reap]() -> asio::awaitable<int> {
        for (;;) {
            int status = 0;
            if (::waitpid(reap.pid, &status, WNOHANG) == reap.pid) {
                reap.reaped = true;
                co_return status;
            }
            co_await sleep_for(20ms);
        }
    };

    corio::stream server(executor);
    {
        const operation_watch::scope op(soak.watch, name + ": accept the peer and read its ready");
        auto first = co_await (acceptor.async_accept(asio::use_awaitable) || exit_of_the_peer());
        // No conditional expression: clang 14 evaluated both arms of
        // `index() == 1 ? std::get<1>(first) : 0` in this coroutine.
        int exited = -1;
        if (const int* status = std::get_if<1>(&first))
            exited = *status;
        BOOST_TEST_REQUIRE(exited == -1, name << ": the peer exited (wait status " << exited
                                              << ") before it was accepted");
        server = std::move(std::get<0>(first));
        std::array<char, 5> ready{};
        co_await asio::async_read(server, asio::buffer(ready), asio::use_awaitable);
    }
    const asio::const_buffer block(big_block().data(), 256 * 1024);
    write_result pending;
    {
        const operation_watch::scope op(soak.watch, name + ": filling the send buffers");
        BOOST_TEST_REQUIRE(co_await write_until_pending(server, block, pending),
                           name << ": no write ever stayed pending");
    }
    ::kill(child, SIGKILL);
    const operation_watch::scope op(soak.watch, name + ": writes to the killed peer");
    co_await until(pending.done);
    // A write that moved bytes before the peer died completes with them;
    // the next ones must see the dead peer.
    error_code write_ec = pending.ec;
    for (int i = 0; i < 1000 && !write_ec; ++i) {
        auto [ec, n] =
            co_await server.async_write_some(block, asio::as_tuple(asio::use_awaitable));
        write_ec = ec;
    }
    BOOST_TEST(write_ec.failed(), name << ": writes to a killed peer go on succeeding");
    ++soak.counts.killed_peers;
}

/// Each acceptor gets a pending accept, then is closed under it.
asio::awaitable<void> close_under_pending_accepts(std::vector<corio::acceptor>& acceptors,
                                                  soak_context& soak, int round) {
    int pending = static_cast<int>(acceptors.size());
    for (auto& a : acceptors)
        a.async_accept([&](error_code ec, corio::stream) {
            if (ec == asio::error::operation_aborted)
                ++soak.counts.aborted_accepts;
            --pending;
        });
    co_await sleep_for(5ms);
    const operation_watch::scope closing(soak.watch, "round " + std::to_string(round) +
                                                         ": closing the listeners");
    for (auto& a : acceptors)
        a.close();
    const operation_watch::scope op(soak.watch, "round " + std::to_string(round) +
                                                    ": accepts ended by their acceptor's close()");
    while (pending > 0)
        co_await sleep_for(1ms);
}

asio::awaitable<void> one_round(soak_context& soak, int round) {
    auto executor = co_await asio::this_coro::executor;
    std::vector<corio::acceptor> acceptors;
    for (int i = 0; i < soak.settings.listeners; ++i) {
        const operation_watch::scope op(soak.watch, "round " + std::to_string(round) +
                                                        ": opening listener " + std::to_string(i));
        acceptors.emplace_back(executor, corio::test::any_port_endpoint(),
                               corio::test::transport_under_test());
    }

    int running = 0;
    std::exception_ptr failure;
    auto finished = [&](std::exception_ptr e) {
        if (e && !failure)
            failure = e;
        --running;
    };
    for (int i = 0; i < soak.settings.listeners; ++i) {
        ++running;
        asio::co_spawn(executor, churn(acceptors[static_cast<std::size_t>(i)], soak, round, i),
                       finished);
    }
    for (int k = 0; k < soak.settings.killed_peers; ++k) {
        ++running;
        asio::co_spawn(executor, kill_a_peer(soak, round, k), finished);
    }
    while (running > 0)
        co_await sleep_for(2ms);
    if (failure)
        std::rethrow_exception(failure);
    co_await close_under_pending_accepts(acceptors, soak, round);
}

/// Descriptors an rsocket holds until its rclose returns: its rdma_cm and
/// its completion channel.
constexpr int descriptors_per_rsocket = 2;

/// Closes handed to the background closer and not yet returned. One stuck
/// in rdma-core holds its socket's descriptors: under rxe, v44's rclose of a
/// stream whose last sends cannot complete waits for them for ever
/// (doc/testing.md, "The soak"). That is not a descriptor corio lost, but
/// it is counted and bounded, never ignored.
int closes_in_background() {
    return static_cast<int>(corio::detail::background_jobs_pending());
}

/// The descriptor count once closes handed to background threads (rclose)
/// are through: at most `baseline` (plus those of closes still running),
/// or else whatever it is after 15 s.
asio::awaitable<int> settled_descriptors(int baseline) {
    const auto deadline = steady::now() + 15s;
    int last = open_descriptors();
    int steady_for = 0;
    while (steady::now() < deadline) {
        co_await sleep_for(50ms);
        const int now = open_descriptors();
        if (baseline >= 0 && now <= baseline)
            co_return now;
        steady_for = now == last ? steady_for + 1 : 0;
        last = now;
        // Warm-up: no baseline yet, so wait for the count to stay put 1 s.
        if (baseline < 0 && steady_for >= 20)
            co_return now;
    }
    co_return last;
}

} // namespace

CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(churn_leaves_no_descriptor_memory_or_operation_behind,
                                        900s) {
    const soak_settings settings;
    operation_watch watch(settings.operation_bound);
    foreign_thread foreign;
    std::printf("soak on %s, %s polling: rounds for %lld s (3 to %d), %d listeners, %d "
                "connections each, %d killed peers a round, operations bounded at %lld s\n",
                std::string(corio::to_string(corio::test::transport_under_test())).c_str(),
                corio::test::poll_mode_under_test() == corio::poll_mode::busy ? "busy" : "thread",
                static_cast<long long>(settings.duration.count()), settings.rounds,
                settings.listeners, settings.connections, settings.killed_peers,
                static_cast<long long>(settings.operation_bound.count()));
    std::fflush(stdout);
    start_the_sanitizer_symbolizer();
    int baseline_fds = -1;
    std::map<int, std::string> baseline_targets;
    long warm_rss = 0;
    int worst_fds = 0;
    int worst_stuck = 0;
    long worst_rss = 0;
    const auto soak_started = steady::now();
    int round = 0;
    for (; round < settings.rounds; ++round) {
        if (round >= 3 && steady::now() - soak_started >= settings.duration)
            break;
        soak_context soak{settings, watch, foreign, {}};
        const auto started = steady::now();
        co_await one_round(soak, round);
        const int fds = co_await settled_descriptors(baseline_fds);
        const long rss = resident_kib();
        const auto& c = soak.counts;
        std::printf("round %d%s: %.1f s, %d verified transfers, %d closed mid-transfer, %d "
                    "cancelled and %d closed from another thread, %d killed peers, %d aborted "
                    "accepts; %zu operations in flight; %d descriptors, RSS %ld KiB\n",
                    round, round == 0 ? " (warm-up)" : "",
                    std::chrono::duration<double>(steady::now() - started).count(),
                    c.verified_transfers, c.closed_mid_transfer, c.foreign_cancels,
                    c.foreign_closes, c.killed_peers, c.aborted_accepts, watch.in_flight(), fds,
                    rss);
        std::fflush(stdout);
        BOOST_TEST(c.aborted_accepts == settings.listeners);
        BOOST_TEST(c.killed_peers == settings.killed_peers);
        if (round == 0) {
            baseline_fds = fds;
            baseline_targets = descriptor_targets();
            warm_rss = rss;
            continue;
        }
        worst_fds = std::max(worst_fds, fds);
        worst_rss = std::max(worst_rss, rss);
        // Still in rdma-core 15 s on: at most one close per killed peer so
        // far (those are the streams whose sends can never complete), each
        // holding one rsocket's descriptors; anything beyond is a leak.
        const int stuck = closes_in_background();
        worst_stuck = std::max(worst_stuck, stuck);
        BOOST_TEST(stuck <= round * settings.killed_peers,
                   "round " << round << ": " << stuck << " closes still running after 15 s");
        if (stuck > 0)
            std::printf("round %d: %d close(s) still inside rdma-core after 15 s, holding %d "
                        "descriptors\n",
                        round, stuck, stuck * descriptors_per_rsocket);
        BOOST_TEST(fds <= baseline_fds + stuck * descriptors_per_rsocket,
                   "round " << round << ": " << fds << " descriptors open, " << baseline_fds
                            << " after the warm-up, " << stuck
                            << " closes still running; added since:"
                            << descriptors_added(baseline_targets, descriptor_targets()));
        BOOST_TEST((under_a_sanitizer || rss - warm_rss <= settings.rss_tolerance_kib),
                   "round " << round << ": RSS " << rss << " KiB, " << warm_rss
                            << " KiB after the warm-up");
    }
    std::printf("soak done: %d rounds in %.1f s, 0 crashes, 0 hung operations; descriptors %d "
                "after the warm-up, at most %d after (tolerance 0 beyond closes still in "
                "rdma-core: at most %d of those); RSS %ld KiB after the "
                "warm-up, at most %ld KiB after (tolerance %ld KiB%s)\n",
                round, std::chrono::duration<double>(steady::now() - soak_started).count(),
                baseline_fds, worst_fds, worst_stuck, warm_rss, worst_rss,
                settings.rss_tolerance_kib,
                under_a_sanitizer ? ", not checked under a sanitizer" : "");
    std::fflush(stdout);
}
