#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include <boost/asio/error.hpp>
#include <boost/system/error_code.hpp>

namespace corio::detail {

/// One stream's stall timeout (corio::stall_timeout): when its reads, writes
/// and iowrites stay pending with no byte moving for the timeout, the
/// service's stall_watcher trips it, and from then on every operation of the
/// socket ends with boost::asio::error::timed_out until it is closed.
///
/// Made by the first set_option of the option on a stream and kept until the
/// stream's state goes; a stream that never sets it has none, so that its
/// transfers pay one branch on a null pointer for it.
class stall_watch {
public:
    using clock = std::chrono::steady_clock;

    /// Zero: off.
    std::chrono::nanoseconds timeout() const noexcept {
        return std::chrono::nanoseconds(timeout_ns_.load(std::memory_order_relaxed));
    }
    void set_timeout(std::chrono::nanoseconds timeout) noexcept {
        timeout_ns_.store(timeout.count(), std::memory_order_relaxed);
    }

    /// When bytes last moved on the socket, or the socket last began to wait
    /// after having nothing pending: the stall clock runs from there.
    clock::time_point last_progress() const noexcept {
        return clock::time_point(clock::duration(last_progress_.load(std::memory_order_relaxed)));
    }
    void restart(clock::time_point now) noexcept {
        last_progress_.store(now.time_since_epoch().count(), std::memory_order_relaxed);
    }

    /// The socket stalled: its operations end with timed_out from now on.
    bool tripped() const noexcept { return tripped_.load(std::memory_order_acquire); }
    void trip() noexcept { tripped_.store(true, std::memory_order_release); }

    /// A new connection on the same state: off again, not tripped.
    void reset() noexcept {
        set_timeout({});
        tripped_.store(false, std::memory_order_release);
    }

    /// Makes `call`, one operation's nonblocking call(s), under the watch:
    /// once tripped, no call and timed_out; otherwise the call, and any byte
    /// it moved (`bytes` grew) restarts the stall clock. Returns what `call`
    /// returns (true when the operation finished).
    template <class Call>
    bool perform(boost::system::error_code& ec, const std::size_t& bytes, Call&& call) {
        if (tripped()) {
            ec = boost::asio::error::timed_out;
            return true;
        }
        const std::size_t before = bytes;
        const bool finished = call();
        if (bytes > before)
            restart(clock::now());
        return finished;
    }

    /// The error a cancelled operation of a socket with watch `watch` (null:
    /// none) ends with: timed_out once the watch tripped, so that the
    /// operations the trip ended report why.
    static boost::system::error_code cancelled_error(const stall_watch* watch) noexcept {
        if (watch != nullptr && watch->tripped())
            return boost::asio::error::timed_out;
        return boost::asio::error::operation_aborted;
    }

    /// Whether the service's stall_watcher holds this socket. Guarded by the
    /// service mutex.
    bool armed_ = false;

private:
    std::atomic<std::int64_t> timeout_ns_{0};
    std::atomic<clock::rep> last_progress_{0};
    std::atomic<bool> tripped_{false};
};

} // namespace corio::detail
