#include "progress_meter.hpp"

#include <cstdio>
#include <utility>

#include <boost/system/error_code.hpp>

namespace coriostream {

namespace {
constexpr std::chrono::milliseconds tick_interval{250};
} // namespace

/// The periodic timer, shared with its pending wait so that stop() may come
/// from any thread while a tick is queued.
class progress_meter::ticker : public std::enable_shared_from_this<ticker> {
public:
    ticker(const boost::asio::any_io_executor& executor, progress_meter& meter)
        : timer_(executor), meter_(&meter) {}

    void arm() {
        timer_.expires_after(tick_interval);
        timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
            std::lock_guard lock(self->mutex_);
            if (ec || self->meter_ == nullptr)
                return;
            self->meter_->tick();
            self->arm();
        });
    }

    void stop() {
        std::lock_guard lock(mutex_);
        meter_ = nullptr;
        // Safe from another thread: the timer's handler takes mutex_ too.
        timer_.cancel();
    }

private:
    std::mutex mutex_;
    boost::asio::steady_timer timer_;
    progress_meter* meter_;
};

progress_meter::progress_meter(const boost::asio::any_io_executor& executor, bool enabled)
    : enabled_(enabled), ticker_(enabled ? std::make_shared<ticker>(executor, *this) : nullptr) {}

progress_meter::~progress_meter() {
    stop();
}

void progress_meter::start() {
    if (ticker_)
        ticker_->arm();
}

void progress_meter::stop() {
    if (ticker_)
        ticker_->stop();
    end_row();
}

void progress_meter::begin_row(const std::string& name, std::uint64_t total_transfers) {
    if (!enabled_)
        return;
    std::lock_guard lock(mutex_);
    erase_line_locked();
    row_active_ = true;
    name_ = name;
    total_ = total_transfers;
    done_.store(0, std::memory_order_relaxed);
    row_start_ = std::chrono::steady_clock::now();
}

void progress_meter::end_row() {
    if (!enabled_)
        return;
    std::lock_guard lock(mutex_);
    row_active_ = false;
    erase_line_locked();
}

void progress_meter::tick() {
    std::lock_guard lock(mutex_);
    if (!row_active_ || std::chrono::steady_clock::now() - row_start_ < show_after)
        return;
    const auto done = done_.load(std::memory_order_relaxed);
    const auto percent = total_ == 0 ? 100 : done * 100 / total_;
    std::fprintf(stderr, "\rcoriostream: %s %3u%%", name_.c_str(),
                 static_cast<unsigned>(percent > 100 ? 100 : percent));
    std::fflush(stderr);
    line_shown_ = true;
}

void progress_meter::erase_line_locked() {
    if (!line_shown_)
        return;
    // Back to the line's start and clear it, so the row lands on a clean
    // line of the same terminal.
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
    line_shown_ = false;
}

} // namespace coriostream
