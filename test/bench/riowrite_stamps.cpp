// An LD_PRELOAD module that timestamps every riowrite call of the program
// it is loaded into, to compare where a latency row's time goes between
// riostream and coriostream without changing either. Both call riowrite
// once per iteration of a 64-byte latency row, so the intervals between
// calls are the iterations. At exit the intervals (CLOCK_MONOTONIC,
// nanoseconds, one per line) go to the file named by RIOWRITE_STAMPS_OUT;
// test/bench/call-intervals summarises them (doc/performance.md, session 23).
//
//   RIOWRITE_STAMPS_OUT=rio.txt LD_PRELOAD=build/test/bench/libriowrite_stamps.so riostream ...

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include <dlfcn.h>
#include <rdma/rsocket.h>

namespace {

// As <rdma/rsocket.h> declares it: v44 returns size_t, not ssize_t.
using riowrite_fn = decltype(&::riowrite);

// Fixed room, so that recording allocates nothing and takes no lock inside
// the timed loop; calls past it are not recorded.
constexpr std::size_t capacity = 1 << 20;
std::uint64_t stamps[capacity];
std::size_t recorded = 0;

std::uint64_t now_ns() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

riowrite_fn next_riowrite() noexcept {
    static const auto next = reinterpret_cast<riowrite_fn>(::dlsym(RTLD_NEXT, "riowrite"));
    return next;
}

[[gnu::destructor]] void write_intervals() {
    const char* path = std::getenv("RIOWRITE_STAMPS_OUT");
    if (path == nullptr || recorded < 2)
        return;
    std::FILE* out = std::fopen(path, "w");
    if (out == nullptr) {
        std::perror(path);
        return;
    }
    for (std::size_t i = 1; i < recorded; ++i)
        std::fprintf(out, "%llu\n", static_cast<unsigned long long>(stamps[i] - stamps[i - 1]));
    std::fclose(out);
}

} // namespace

extern "C" size_t riowrite(int socket, const void* buf, size_t count, off_t offset, int flags) {
    if (recorded < capacity)
        stamps[recorded++] = now_ns();
    const auto next = next_riowrite();
    if (next == nullptr) {
        errno = ENOSYS;
        return static_cast<size_t>(-1);
    }
    return next(socket, buf, count, offset, flags);
}
