#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace coriostream {

/// The first failure of a run. Connections run side by side (--streams, and
/// both ends of --loopback); when one fails, the others must stop waiting
/// for it, and only the first message is worth printing: the rest are
/// usually its echoes.
///
/// @par Thread Safety
/// Shared objects: safe.
class failure_latch {
public:
    /// Runs `hook` when the run fails (at once if it already has). Hooks
    /// run on the failing thread and must only post or signal.
    void on_failure(std::function<void()> hook);

    /// Records `message` if it is the first, then runs the hooks once.
    void fail(const std::string& message);

    bool failed() const;
    /// The first failure's message; empty while nothing failed.
    std::string message() const;

private:
    mutable std::mutex mutex_;
    std::string message_;
    bool failed_ = false;
    std::vector<std::function<void()>> hooks_;
};

} // namespace coriostream
