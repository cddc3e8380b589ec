#pragma once

namespace corio {

/// How an rpoll_service waits for readiness.
enum class poll_mode {
    /// A poller thread blocks in rpoll, timeout -1, and hands ready operations to
    /// their executors. Costs a thread hop per wait (tens of microseconds
    /// across vCPUs) but no CPU while idle.
    thread,
    /// The thread running the io_context polls with rpoll, timeout 0, while any
    /// operation waits. No hop, lowest latency, one core busy while waiting.
    busy,
};

} // namespace corio
