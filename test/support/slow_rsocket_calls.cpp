// An LD_PRELOAD library for tests: makes rdma-core's rclose and rshutdown
// take CORIO_SLOW_RSOCKET_MS milliseconds longer (default 300), so that a
// test can see whether any of them runs on a thread it must not block
// (doc/architecture.md, "Which thread runs what"). Priming librdmacm's
// services closes an rsocket per thread start, so it is slowed too.
//
// It also watches the socket's own I/O while a shutdown of it runs: every
// data call and every rpoll that has the descriptor in its set, at the same
// time as that shutdown, is counted (corio_rsocket_calls_beside_shutdown):
// v44's shutdown takes neither of the socket's locks and switches its
// channels to blocking under such calls.
//
// This file interposes those calls rather than making them on corio's
// behalf; rsocket_ops_confinement_test allows it by name.

#include <atomic>
#include <cstdlib>
#include <new>
#include <ctime>

#include <poll.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <dlfcn.h>

namespace {

long delay_ms() {
    static const long ms = [] {
        const char* text = std::getenv("CORIO_SLOW_RSOCKET_MS");
        return text ? std::strtol(text, nullptr, 10) : 300L;
    }();
    return ms;
}

/// Slowing starts at once, unless CORIO_SLOW_RSOCKET_LATER is set: then
/// only after the program calls corio_slow_rsocket_calls_begin (so that its
/// set-up, priming included, runs at full speed).
std::atomic<bool> slowing{std::getenv("CORIO_SLOW_RSOCKET_LATER") == nullptr};

void pause_for_a_while() {
    if (!slowing.load())
        return;
    timespec t{delay_ms() / 1000, (delay_ms() % 1000) * 1000000L};
    while (::nanosleep(&t, &t) != 0) {
    }
}

template <class Function>
Function next_definition(const char* name) {
    return reinterpret_cast<Function>(::dlsym(RTLD_NEXT, name));
}

std::atomic<long> slowed_calls{0};

// Per descriptor number: I/O calls in progress, and whether a shutdown is.
constexpr int tracked = 1 << 16;
std::atomic<int> io_in_progress[tracked];
std::atomic<bool> shutdown_in_progress[tracked];
std::atomic<long> beside_shutdown{0};

bool trackable(int fd) { return fd >= 0 && fd < tracked; }

/// Marks an I/O call on `fd` for its duration.
class io_call {
public:
    explicit io_call(int fd) : fd_(trackable(fd) ? fd : -1) {
        if (fd_ < 0)
            return;
        ++io_in_progress[fd_];
        if (shutdown_in_progress[fd_])
            ++beside_shutdown;
    }
    ~io_call() {
        if (fd_ >= 0)
            --io_in_progress[fd_];
    }
    io_call(const io_call&) = delete;
    io_call& operator=(const io_call&) = delete;

private:
    int fd_;
};

void check_no_io(int fd) {
    if (trackable(fd) && io_in_progress[fd] > 0)
        ++beside_shutdown;
}

} // namespace

extern "C" {

/// How many calls were slowed: a test checks it to know the library is in.
long corio_slowed_rsocket_calls() { return slowed_calls.load(); }

/// Starts slowing (see CORIO_SLOW_RSOCKET_LATER).
void corio_slow_rsocket_calls_begin() { slowing = true; }

int rclose(int socket) {
    static const auto real = next_definition<int (*)(int)>("rclose");
    if (slowing)
        ++slowed_calls;
    pause_for_a_while();
    return real(socket);
}

/// I/O calls seen on a socket while a shutdown of it was under way.
long corio_rsocket_calls_beside_shutdown() { return beside_shutdown.load(); }

int rshutdown(int socket, int how) {
    static const auto real = next_definition<int (*)(int, int)>("rshutdown");
    if (slowing)
        ++slowed_calls;
    const bool tracking = trackable(socket);
    if (tracking) {
        shutdown_in_progress[socket] = true;
        check_no_io(socket);
    }
    pause_for_a_while();
    if (tracking)
        check_no_io(socket);
    const int result = real(socket, how);
    if (tracking)
        shutdown_in_progress[socket] = false;
    return result;
}

int rpoll(struct pollfd* fds, nfds_t nfds, int timeout) {
    static const auto real = next_definition<int (*)(pollfd*, nfds_t, int)>("rpoll");
    // At most a few sockets are watched at once in these tests.
    constexpr nfds_t most = 64;
    alignas(io_call) unsigned char storage[most][sizeof(io_call)];
    const nfds_t marked = nfds < most ? nfds : most;
    for (nfds_t i = 0; i < marked; ++i)
        new (storage[i]) io_call(fds[i].fd);
    const int result = real(fds, nfds, timeout);
    for (nfds_t i = 0; i < marked; ++i)
        reinterpret_cast<io_call*>(storage[i])->~io_call();
    return result;
}

ssize_t rrecv(int socket, void* buf, size_t len, int flags) {
    static const auto real = next_definition<ssize_t (*)(int, void*, size_t, int)>("rrecv");
    io_call call(socket);
    return real(socket, buf, len, flags);
}

ssize_t rsend(int socket, const void* buf, size_t len, int flags) {
    static const auto real = next_definition<ssize_t (*)(int, const void*, size_t, int)>("rsend");
    io_call call(socket);
    return real(socket, buf, len, flags);
}

ssize_t rreadv(int socket, const struct iovec* iov, int iovcnt) {
    static const auto real = next_definition<ssize_t (*)(int, const iovec*, int)>("rreadv");
    io_call call(socket);
    return real(socket, iov, iovcnt);
}

ssize_t rwritev(int socket, const struct iovec* iov, int iovcnt) {
    static const auto real = next_definition<ssize_t (*)(int, const iovec*, int)>("rwritev");
    io_call call(socket);
    return real(socket, iov, iovcnt);
}

} // extern "C"
