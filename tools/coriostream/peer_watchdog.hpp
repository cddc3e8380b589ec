#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

#include <boost/asio/any_io_executor.hpp>

namespace coriostream {

/// Gives up on a peer that stops answering: riostream waits forever, but
/// coriostream's --timeout says how long a connection may go without
/// progress. The owner calls note_progress() whenever the peer has done its
/// part (a transfer arrived, a write was accepted); when `timeout` passes
/// without one, the watchdog runs `on_expiry` once, which closes the socket
/// or acceptor, so that the pending operation completes with an error, and
/// expired() turns true so that the owner can tell a timeout from other
/// errors.
///
/// Cheaper than a deadline per operation: one timer ticks a few times per
/// timeout, and noting progress is an increment.
///
/// Some progress happens without a call of this end's: a bandwidth row's
/// riowrites land in its mapping while the receiver waits for the last one.
/// For those waits the owner sets an activity probe, which a check that
/// finds no progress noted asks instead (landing_probe).
///
/// @par Thread Safety
/// Every member, including the constructor and destructor, must be called
/// on `executor`, which must be a strand (or a single-threaded context): the
/// timer's handler runs there too, unsynchronised.
class peer_watchdog {
public:
    /// Starts watching. A zero timeout never expires (--timeout 0).
    peer_watchdog(const boost::asio::any_io_executor& executor, std::chrono::seconds timeout,
                  std::function<void()> on_expiry);
    /// Stops watching; on_expiry will not run after this.
    ~peer_watchdog();

    peer_watchdog(const peer_watchdog&) = delete;
    peer_watchdog& operator=(const peer_watchdog&) = delete;

    /// Sets an activity probe for as long as it lives: however the wait it
    /// watches ends, the probe goes with it.
    class probe_scope {
    public:
        probe_scope(peer_watchdog& watchdog, std::function<bool()> probe) : watchdog_(watchdog) {
            watchdog_.set_activity_probe(std::move(probe));
        }
        ~probe_scope() { watchdog_.clear_activity_probe(); }
        probe_scope(const probe_scope&) = delete;
        probe_scope& operator=(const probe_scope&) = delete;

    private:
        peer_watchdog& watchdog_;
    };

    void note_progress() noexcept { ++*progress_; }
    /// Until cleared, a check that finds no progress noted since the last
    /// one calls `probe`, and counts a true answer as progress. The probe
    /// runs on the watchdog's executor, between the owner's handlers.
    void set_activity_probe(std::function<bool()> probe);
    void clear_activity_probe() noexcept;
    bool expired() const noexcept;
    std::chrono::seconds timeout() const noexcept { return timeout_; }

private:
    class ticker;

    std::chrono::seconds timeout_;
    std::shared_ptr<std::uint64_t> progress_;
    std::shared_ptr<ticker> ticker_;
};

} // namespace coriostream
