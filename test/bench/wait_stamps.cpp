// An LD_PRELOAD module that records, per thread, the entry and exit times of
// the calls a waiting transfer goes through, to see where a thread-mode
// latency row's time goes: rsockets' rrecv, rsend and rpoll; the kernel's
// poll (inside rpoll), epoll_wait (Asio's reactor), read and write (the
// completion channel, eventfds, rxe's doorbell). rstream -T b waits inside a
// blocking rrecv; coriostream's poller thread waits in rpoll and hands the
// socket to the io_context's thread, asleep in epoll_wait. At exit every
// recorded call goes to the file named by WAIT_STAMPS_OUT, one per line:
//
//   THREAD CALL FD ENTRY_NS EXIT_NS RESULT
//
// (CLOCK_MONOTONIC nanoseconds; THREAD is the kernel's thread id; FD is the
// timeout instead for rpoll, poll and epoll_wait). Recording starts at the
// first rrecv or rsend.
// test/bench/wait-timeline summarises a client's and its server's files
// from one machine (doc/performance.md, session 34).
//
//   WAIT_STAMPS_OUT=client.txt LD_PRELOAD=build/test/bench/libwait_stamps.so rstream -T b ...

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include <dlfcn.h>
#include <poll.h>
#include <rdma/rsocket.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace {

enum class call : std::uint8_t { rrecv, rsend, rpoll, poll, epoll_wait, read, write };
constexpr const char* call_names[] = {"rrecv", "rsend", "rpoll", "poll", "epoll_wait", "read",
                                      "write"};

struct record {
    std::uint64_t entry;
    std::uint64_t exit;
    std::int64_t result;
    std::int32_t thread;
    std::int32_t fd;
    call what;
    // Set, with release, once the fields above are written: the writer at
    // exit may run while other threads still record, and reads a slot only
    // when its record is whole (claimed but unwritten slots are skipped).
    std::atomic<bool> complete;
};

// Fixed room, claimed with one atomic add: recording allocates nothing and
// takes no lock. Calls past it are not recorded.
constexpr std::size_t capacity = 1 << 21;
record records[capacity];
std::atomic<std::size_t> claimed{0};
// Off until the first rsocket data call: a program's start-up (loading,
// address resolution) makes thousands of reads and writes that say nothing
// about a transfer and would fill the room of a short run's files.
std::atomic<bool> started{false};

std::uint64_t now_ns() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

std::int32_t this_thread() noexcept {
    thread_local const auto id = static_cast<std::int32_t>(::syscall(SYS_gettid));
    return id;
}

template <typename Fn>
Fn next(const char* name) noexcept {
    return reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, name));
}

// Times `body` and records it if recording has started; errno is the call's
// own when this returns.
template <typename Body>
auto timed(call what, int fd, Body body) {
    if (!started.load(std::memory_order_relaxed))
        return body();
    const std::uint64_t entry = now_ns();
    const auto result = body();
    const int saved_errno = errno;
    const std::uint64_t exit = now_ns();
    const std::size_t slot = claimed.fetch_add(1, std::memory_order_relaxed);
    if (slot < capacity) {
        record& r = records[slot];
        r.entry = entry;
        r.exit = exit;
        r.result = static_cast<std::int64_t>(result);
        r.thread = this_thread();
        r.fd = fd;
        r.what = what;
        r.complete.store(true, std::memory_order_release);
    }
    errno = saved_errno;
    return result;
}

[[gnu::destructor]] void write_records() {
    const char* path = std::getenv("WAIT_STAMPS_OUT");
    if (path == nullptr)
        return;
    // The program's threads may still run (rsockets' service threads are
    // never joined): stop recording, and write only the slots claimed so far
    // whose records are complete.
    started.store(false, std::memory_order_relaxed);
    const std::size_t recorded = std::min(claimed.load(std::memory_order_acquire), capacity);
    std::FILE* out = std::fopen(path, "w");
    if (out == nullptr) {
        std::perror(path);
        return;
    }
    for (std::size_t i = 0; i < recorded; ++i) {
        const record& r = records[i];
        if (!r.complete.load(std::memory_order_acquire))
            continue;
        std::fprintf(out, "%d %s %d %llu %llu %lld\n", r.thread,
                     call_names[static_cast<int>(r.what)], r.fd,
                     static_cast<unsigned long long>(r.entry),
                     static_cast<unsigned long long>(r.exit), static_cast<long long>(r.result));
    }
    std::fclose(out);
}

} // namespace

extern "C" {

ssize_t rrecv(int socket, void* buf, size_t len, int flags) {
    static const auto fn = next<decltype(&::rrecv)>("rrecv");
    started.store(true, std::memory_order_relaxed);
    return timed(call::rrecv, socket, [&] { return fn(socket, buf, len, flags); });
}

ssize_t rsend(int socket, const void* buf, size_t len, int flags) {
    static const auto fn = next<decltype(&::rsend)>("rsend");
    started.store(true, std::memory_order_relaxed);
    return timed(call::rsend, socket, [&] { return fn(socket, buf, len, flags); });
}

int rpoll(struct pollfd* fds, nfds_t nfds, int timeout) {
    static const auto fn = next<decltype(&::rpoll)>("rpoll");
    return timed(call::rpoll, timeout, [&] { return fn(fds, nfds, timeout); });
}

int poll(struct pollfd* fds, nfds_t nfds, int timeout) {
    static const auto fn = next<decltype(&::poll)>("poll");
    return timed(call::poll, timeout, [&] { return fn(fds, nfds, timeout); });
}

int epoll_wait(int epfd, struct epoll_event* events, int maxevents, int timeout) {
    static const auto fn = next<decltype(&::epoll_wait)>("epoll_wait");
    return timed(call::epoll_wait, timeout, [&] { return fn(epfd, events, maxevents, timeout); });
}

ssize_t read(int fd, void* buf, size_t count) {
    static const auto fn = next<decltype(&::read)>("read");
    return timed(call::read, fd, [&] { return fn(fd, buf, count); });
}

ssize_t write(int fd, const void* buf, size_t count) {
    static const auto fn = next<decltype(&::write)>("write");
    return timed(call::write, fd, [&] { return fn(fd, buf, count); });
}

} // extern "C"
