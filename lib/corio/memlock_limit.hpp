#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <boost/system/error_code.hpp>

namespace corio {

/// The process's room for pinned memory, as the kernel judges an RDMA
/// registration (ibv_reg_mr, which riomap and every rsocket's buffers make):
/// RLIMIT_MEMLOCK against the pages the process has pinned already, unless
/// it holds CAP_IPC_LOCK, which lifts the limit.
struct memlock_limit {
    /// RLIMIT_MEMLOCK's soft limit in bytes; empty when it does not apply
    /// (RLIM_INFINITY, or CAP_IPC_LOCK).
    std::optional<std::uint64_t> limit;
    /// Bytes pinned now (VmPin of /proc/self/status; 0 where unreadable).
    std::uint64_t pinned = 0;

    /// The limit and use of this process now.
    static memlock_limit current();

    /// corio::error::memlock_limit_exceeded when pinning `bytes` more would
    /// pass the limit, else success.
    boost::system::error_code check(std::uint64_t bytes) const noexcept;
};

/// The bytes the kernel pins to register [data, data + size): whole pages.
std::uint64_t pinned_size(const void* data, std::size_t size) noexcept;

/// One line saying why `bytes` of pinned memory were refused and how to
/// raise the limit: "needs 1048576 bytes of pinned memory; RLIMIT_MEMLOCK is
/// 65536 bytes with 8192 pinned already: raise it with `ulimit -l` (KiB,
/// or unlimited) or a memlock line in /etc/security/limits.conf".
std::string memlock_diagnostic(std::uint64_t bytes);
/// As above, for an ENOMEM of rdma-core whose size corio does not know (an
/// rsocket's own buffers and queue pair, pinned by rsocket, connect or
/// accept): "rdma-core could not pin memory; RLIMIT_MEMLOCK is ...".
std::string memlock_diagnostic();

} // namespace corio
