#pragma once

#include <chrono>
#include <functional>
#include <utility>

#include <boost/asio/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>

namespace corio::detail {

/// The deadline of one step of a zero-copy channel's protocol (its
/// handshake): a peer that connects and then sends nothing, or part of a
/// record, must not hold the other side, and with it a server's slot and
/// pinned region, forever. When it passes, `on_expiry` cancels the step's
/// stream operation, which then ends with operation_aborted; outcome()
/// turns that into boost::asio::error::timed_out.
///
/// Lives in the channel's state, on the stream's executor; the step disarms
/// it when it completes, which also drops what on_expiry holds.
class zero_copy_deadline {
public:
    using duration = std::chrono::steady_clock::duration;
    /// A peer on a working network answers a hello in far less.
    static constexpr duration default_timeout = std::chrono::seconds(30);

    template <class Executor>
    explicit zero_copy_deadline(const Executor& executor) : timer_(executor) {}

    /// The timeout the next arm uses; zero or less: no deadline.
    void set_timeout(duration timeout) noexcept { timeout_ = timeout; }
    duration timeout() const noexcept { return timeout_; }

    /// Starts the deadline of a step.
    void arm(std::function<void()> on_expiry) {
        expired_ = false;
        if (timeout_ <= duration::zero())
            return;
        timer_.expires_after(timeout_);
        timer_.async_wait([this, on_expiry = std::move(on_expiry)](boost::system::error_code ec) {
            // Cancelled: the step completed (or the state is going), and
            // `this` may be gone with it.
            if (ec)
                return;
            expired_ = true;
            on_expiry();
        });
    }

    /// The step completed: the deadline no longer applies.
    void disarm() noexcept { timer_.cancel(); }

    /// What a step's stream operation ended with, with a cancellation the
    /// deadline caused reported as timed_out.
    boost::system::error_code outcome(const boost::system::error_code& ec) const noexcept {
        if (expired_ && ec == boost::asio::error::operation_aborted)
            return boost::asio::error::timed_out;
        return ec;
    }

private:
    boost::asio::steady_timer timer_;
    duration timeout_ = default_timeout;
    bool expired_ = false;
};

} // namespace corio::detail
