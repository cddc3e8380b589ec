#include "peer_watchdog.hpp"

#include <algorithm>
#include <utility>

#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>

namespace coriostream {

namespace {
// The watchdog notices a stall between timeout and timeout + this.
constexpr std::chrono::steady_clock::duration longest_check_interval = std::chrono::seconds(1);
} // namespace

/// The timer side, shared with the pending wait so that the watchdog can be
/// destroyed while a tick is queued.
class peer_watchdog::ticker : public std::enable_shared_from_this<ticker> {
public:
    ticker(const boost::asio::any_io_executor& executor, std::chrono::seconds timeout,
           std::shared_ptr<const std::uint64_t> progress, std::function<void()> on_expiry)
        : timer_(executor), timeout_(timeout),
          // A quarter of the timeout in the clock's units: in seconds, a
          // timeout under 4 s made a zero interval, and the timer spun.
          interval_(std::min(std::chrono::steady_clock::duration(timeout) / 4,
                             longest_check_interval)),
          progress_(std::move(progress)), on_expiry_(std::move(on_expiry)),
          seen_progress_(*progress_), last_change_(std::chrono::steady_clock::now()) {}

    void arm() {
        timer_.expires_after(interval_);
        timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
            self->on_tick(ec);
        });
    }

    void stop() {
        stopped_ = true;
        timer_.cancel();
    }

    bool expired() const noexcept { return expired_; }

    void set_probe(std::function<bool()> probe) { probe_ = std::move(probe); }

private:
    void on_tick(const boost::system::error_code& ec) {
        if (ec || stopped_)
            return;
        const auto now = std::chrono::steady_clock::now();
        if (*progress_ != seen_progress_) {
            seen_progress_ = *progress_;
            last_change_ = now;
        } else if (probe_ && probe_()) {
            last_change_ = now;
        } else if (now - last_change_ >= timeout_) {
            expired_ = true;
            // Moved out first: the hook may destroy what it captured.
            auto hook = std::move(on_expiry_);
            hook();
            return;
        }
        arm();
    }

    boost::asio::steady_timer timer_;
    std::chrono::seconds timeout_;
    std::chrono::steady_clock::duration interval_;
    std::shared_ptr<const std::uint64_t> progress_;
    std::function<void()> on_expiry_;
    std::function<bool()> probe_;
    std::uint64_t seen_progress_;
    std::chrono::steady_clock::time_point last_change_;
    bool expired_ = false;
    bool stopped_ = false;
};

peer_watchdog::peer_watchdog(const boost::asio::any_io_executor& executor,
                             std::chrono::seconds timeout, std::function<void()> on_expiry)
    : timeout_(timeout), progress_(std::make_shared<std::uint64_t>(0)) {
    if (timeout.count() > 0) {
        ticker_ = std::make_shared<ticker>(executor, timeout, progress_, std::move(on_expiry));
        ticker_->arm();
    }
}

peer_watchdog::~peer_watchdog() {
    if (ticker_)
        ticker_->stop();
}

void peer_watchdog::set_activity_probe(std::function<bool()> probe) {
    if (ticker_)
        ticker_->set_probe(std::move(probe));
}

void peer_watchdog::clear_activity_probe() noexcept {
    if (ticker_)
        ticker_->set_probe(nullptr);
}

bool peer_watchdog::expired() const noexcept {
    return ticker_ && ticker_->expired();
}

} // namespace coriostream
