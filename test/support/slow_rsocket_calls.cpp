// An LD_PRELOAD library for tests: makes rdma-core's rclose and rshutdown
// take CORIO_SLOW_RSOCKET_MS milliseconds longer (default 300), so that a
// test can see whether any of them runs on a thread it must not block
// (doc/architecture.md, "Which thread runs what"). Priming librdmacm's
// services closes an rsocket per thread start, so it is slowed too.
//
// This file interposes the two calls rather than making them on corio's
// behalf; rsocket_ops_confinement_test allows it by name.

#include <atomic>
#include <cstdlib>
#include <ctime>

#include <dlfcn.h>

namespace {

long delay_ms() {
    static const long ms = [] {
        const char* text = std::getenv("CORIO_SLOW_RSOCKET_MS");
        return text ? std::strtol(text, nullptr, 10) : 300L;
    }();
    return ms;
}

void pause_for_a_while() {
    timespec t{delay_ms() / 1000, (delay_ms() % 1000) * 1000000L};
    while (::nanosleep(&t, &t) != 0) {
    }
}

template <class Function>
Function next_definition(const char* name) {
    return reinterpret_cast<Function>(::dlsym(RTLD_NEXT, name));
}

std::atomic<long> slowed_calls{0};

} // namespace

extern "C" {

/// How many calls were slowed: a test checks it to know the library is in.
long corio_slowed_rsocket_calls() { return slowed_calls.load(); }

int rclose(int socket) {
    static const auto real = next_definition<int (*)(int)>("rclose");
    ++slowed_calls;
    pause_for_a_while();
    return real(socket);
}

int rshutdown(int socket, int how) {
    static const auto real = next_definition<int (*)(int, int)>("rshutdown");
    ++slowed_calls;
    pause_for_a_while();
    return real(socket, how);
}

} // extern "C"
