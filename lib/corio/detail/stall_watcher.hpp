#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace corio::detail {

class socket_impl;

/// The thread that checks stall timeouts (detail::stall_watch) for one
/// rpoll_service: it holds each socket that has operations pending and a
/// stall timeout set, and at the socket's deadline asks the service what to
/// do. A thread of its own rather than a timer of the io_context: the
/// service also serves execution contexts that are no io_context, and every
/// poll mode (a busy poller never sleeps, a reactor wait knows no deadline).
/// Started by the first watch(), so a process that sets no stall timeout
/// has no such thread.
///
/// @par Thread Safety
/// Every member may be called from any thread but the watcher's own; the
/// watcher never holds its mutex while it calls `check`, so a caller may
/// hold the service mutex around watch().
class stall_watcher {
public:
    using clock = std::chrono::steady_clock;
    /// Asked at a socket's deadline, with the service mutex not held: the
    /// socket's next deadline, or nullopt to let go of it.
    using check_function = std::function<std::optional<clock::time_point>(socket_impl&)>;

    explicit stall_watcher(check_function check);
    /// Stops and joins the thread.
    ~stall_watcher();

    stall_watcher(const stall_watcher&) = delete;
    stall_watcher& operator=(const stall_watcher&) = delete;

    /// Checks `impl` at `deadline` (and then as check says). A socket whose
    /// state is gone by then is dropped.
    void watch(std::weak_ptr<socket_impl> impl, clock::time_point deadline);

private:
    struct entry {
        std::weak_ptr<socket_impl> impl;
        clock::time_point deadline;
    };

    void run();

    const check_function check_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::vector<entry> entries_;
    bool stopping_ = false;
    std::thread thread_;
};

} // namespace corio::detail
