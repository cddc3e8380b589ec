#include <corio/memlock_limit.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include <sys/resource.h>
#include <unistd.h>

#include <corio/error.hpp>

namespace corio {

namespace {

/// CAP_IPC_LOCK (bit 14 of CapEff) lifts RLIMIT_MEMLOCK for registrations.
constexpr int cap_ipc_lock = 14;

} // namespace

memlock_limit memlock_limit::current() {
    memlock_limit out;
    bool ipc_lock = false;
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);) {
        std::istringstream fields(line);
        std::string key;
        fields >> key;
        if (key == "VmPin:") {
            std::uint64_t kib = 0;
            fields >> kib;
            out.pinned = kib * 1024;
        } else if (key == "CapEff:") {
            std::uint64_t caps = 0;
            fields >> std::hex >> caps;
            ipc_lock = (caps >> cap_ipc_lock) & 1;
        }
    }
    rlimit limit{};
    if (!ipc_lock && ::getrlimit(RLIMIT_MEMLOCK, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
        out.limit = limit.rlim_cur;
    return out;
}

boost::system::error_code memlock_limit::check(std::uint64_t bytes) const noexcept {
    if (limit && (pinned > *limit || bytes > *limit - pinned))
        return error::memlock_limit_exceeded;
    return {};
}

std::uint64_t pinned_size(const void* data, std::size_t size) noexcept {
    if (size == 0)
        return 0;
    static const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const auto start = reinterpret_cast<std::uintptr_t>(data);
    const std::uint64_t first = start / page * page;
    const std::uint64_t end = (start + size + page - 1) / page * page;
    return end - first;
}

namespace {

std::string diagnostic(std::string line) {
    const auto now = memlock_limit::current();
    if (now.limit)
        line += "RLIMIT_MEMLOCK is " + std::to_string(*now.limit) + " bytes with " +
                std::to_string(now.pinned) + " pinned already";
    else
        line += "the registration was refused (RLIMIT_MEMLOCK does not limit this process now)";
    return line + ": raise it with `ulimit -l` (KiB, or unlimited) or a memlock line in "
                  "/etc/security/limits.conf";
}

} // namespace

std::string memlock_diagnostic(std::uint64_t bytes) {
    return diagnostic("needs " + std::to_string(bytes) + " bytes of pinned memory; ");
}

std::string memlock_diagnostic() {
    return diagnostic("rdma-core could not pin memory; ");
}

} // namespace corio
