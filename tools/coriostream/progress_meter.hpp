#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

namespace coriostream {

/// A progress line on stderr for rows that take a while: riostream is silent
/// until a row is done, and 1m_bw over a slow link, or 64_lat's 100000 round
/// trips, can take long enough to look like a hang. The line appears once a
/// row has run for show_after, only when stderr is a terminal, and is erased
/// before the row itself is printed.
///
/// @par Thread Safety
/// Shared objects: safe. add() is a relaxed atomic increment, cheap enough
/// for every transfer.
class progress_meter {
public:
    static constexpr std::chrono::seconds show_after{2};

    /// Does nothing at all unless `enabled`. The timer runs on `executor`.
    progress_meter(const boost::asio::any_io_executor& executor, bool enabled);
    ~progress_meter();

    progress_meter(const progress_meter&) = delete;
    progress_meter& operator=(const progress_meter&) = delete;

    /// Starts ticking; stop() must follow, or the io_context never runs out
    /// of work.
    void start();
    void stop();

    /// A row named `name` starts, which will take `total_transfers` calls of
    /// add(1) in all.
    void begin_row(const std::string& name, std::uint64_t total_transfers);
    void add(std::uint64_t transfers) noexcept {
        if (enabled_)
            done_.fetch_add(transfers, std::memory_order_relaxed);
    }
    /// Erases the progress line, if shown, before the row is printed.
    void end_row();

private:
    class ticker;

    void tick();
    void erase_line_locked();

    const bool enabled_;
    std::atomic<std::uint64_t> done_{0};
    std::mutex mutex_;
    bool row_active_ = false;
    bool line_shown_ = false;
    std::string name_;
    std::uint64_t total_ = 0;
    std::chrono::steady_clock::time_point row_start_{};
    std::shared_ptr<ticker> ticker_;
};

} // namespace coriostream
