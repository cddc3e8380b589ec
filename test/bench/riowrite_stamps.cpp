// An LD_PRELOAD module that timestamps every riowrite call of the program
// it is loaded into, to compare where a latency row's time goes between
// riostream and coriostream without changing either. Both call riowrite
// once per iteration of a 64-byte latency row, so the intervals between
// calls are the iterations. At exit the intervals (CLOCK_MONOTONIC,
// nanoseconds, one per line) go to the file named by RIOWRITE_STAMPS_OUT,
// and the times themselves (CLOCK_MONOTONIC, nanoseconds) to the file named
// by RIOWRITE_STAMPS_TIMES; test/bench/call-intervals summarises the first
// and, given a client's and its server's times from one machine, splits
// each iteration into its two halves (doc/performance.md, sessions 23 and
// 24). RIOWRITE_STAMPS_CALLS names a file for each call's entry and exit
// times, "ENTRY EXIT" per line, so that a bandwidth row's intervals split
// into the time inside riowrite (rsockets, the provider, the kernel) and
// the time the program spends between calls (call-intervals --inside,
// doc/performance.md, session 29).
//
//   RIOWRITE_STAMPS_OUT=rio.txt LD_PRELOAD=build/test/bench/libriowrite_stamps.so riostream ...

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <type_traits>
#include <utility>

#include <dlfcn.h>
#include <rdma/rsocket.h>

namespace {

// As <rdma/rsocket.h> declares it: v44 returns size_t, not ssize_t.
using riowrite_fn = decltype(&::riowrite);

// Fixed room, so that recording allocates nothing and takes no lock inside
// the timed loop; calls past it are not recorded. The index is claimed with
// one atomic add, so that a program calling riowrite from several threads
// (coriostream --streams N --threads M) gets one slot per call, never
// two calls in one slot; its intervals then mix the threads' calls, which
// only a one-stream latency row keeps meaningful.
constexpr std::size_t capacity = 1 << 20;
std::uint64_t stamps[capacity];
// Each call's exit, stamped only when RIOWRITE_STAMPS_CALLS asks for it
// (read once, at the first call), so that the other files' runs pay no
// second clock read per call.
std::uint64_t exits[capacity];
std::atomic<std::size_t> claimed{0};

std::uint64_t now_ns() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

riowrite_fn next_riowrite() noexcept {
    static const auto next = reinterpret_cast<riowrite_fn>(::dlsym(RTLD_NEXT, "riowrite"));
    return next;
}

// Writes one line per recorded call from `first`: the numbers `value(i)`
// gives (one, or a pair), separated by a space.
template <typename Value>
void write_lines(const char* path, std::size_t first, std::size_t end, Value value) {
    std::FILE* out = std::fopen(path, "w");
    if (out == nullptr) {
        std::perror(path);
        return;
    }
    for (std::size_t i = first; i < end; ++i) {
        if constexpr (std::is_integral_v<decltype(value(i))>) {
            std::fprintf(out, "%llu\n", static_cast<unsigned long long>(value(i)));
        } else {
            const auto [a, b] = value(i);
            std::fprintf(out, "%llu %llu\n", static_cast<unsigned long long>(a),
                         static_cast<unsigned long long>(b));
        }
    }
    std::fclose(out);
}

[[gnu::destructor]] void write_stamps() {
    // Runs after main returns (see riowrite below for the threads).
    const std::size_t recorded = std::min(claimed.load(std::memory_order_relaxed), capacity);
    if (const char* path = std::getenv("RIOWRITE_STAMPS_OUT"); path != nullptr && recorded >= 2)
        write_lines(path, 1, recorded, [](std::size_t i) { return stamps[i] - stamps[i - 1]; });
    if (const char* path = std::getenv("RIOWRITE_STAMPS_TIMES"); path != nullptr && recorded >= 1)
        write_lines(path, 0, recorded, [](std::size_t i) { return stamps[i]; });
    if (const char* path = std::getenv("RIOWRITE_STAMPS_CALLS"); path != nullptr && recorded >= 1)
        write_lines(path, 0, recorded, [](std::size_t i) { return std::pair(stamps[i], exits[i]); });
}

bool stamp_exits() noexcept {
    static const bool wanted = std::getenv("RIOWRITE_STAMPS_CALLS") != nullptr;
    return wanted;
}

} // namespace

extern "C" size_t riowrite(int socket, const void* buf, size_t count, off_t offset, int flags) {
    const std::uint64_t stamp = now_ns();
    // Relaxed: the slot is this call's alone. The destructor reads the
    // slots after main returns; riostream and coriostream join the threads
    // that call riowrite before that, which orders their writes before its
    // reads. A program that leaves such a thread running would race here.
    const std::size_t slot = claimed.fetch_add(1, std::memory_order_relaxed);
    if (slot < capacity)
        stamps[slot] = stamp;
    const auto next = next_riowrite();
    if (next == nullptr) {
        errno = ENOSYS;
        return static_cast<size_t>(-1);
    }
    const size_t result = next(socket, buf, count, offset, flags);
    if (slot < capacity && stamp_exits()) {
        // The clock read must not change errno, which the caller reads next.
        const int saved_errno = errno;
        exits[slot] = now_ns();
        errno = saved_errno;
    }
    return result;
}
