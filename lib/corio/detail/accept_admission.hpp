#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <utility>

#include <boost/asio/ip/tcp.hpp>

namespace corio::detail {

/// Which connections an acceptor hands to the application: its accept filter
/// and its limit on streams open at once, and what they refused. Shared by
/// the acceptor, its accept operations and (through open slots) the streams
/// it accepted, so that a stream may outlive its acceptor.
class accept_admission : public std::enable_shared_from_this<accept_admission> {
public:
    using filter_type = std::function<bool(const boost::asio::ip::tcp::endpoint&)>;
    static constexpr std::size_t unlimited = std::numeric_limits<std::size_t>::max();

    /// Set by the acceptor's thread while no accept is pending (the
    /// acceptor's documented rule), read by accept operations.
    filter_type filter_;
    std::size_t max_open_ = unlimited;

    /// True when `peer` may connect: no filter, or the filter admits it. A
    /// filter that throws refuses: the accept runs inside the service, which
    /// has no one to hand the exception to.
    bool admits(const boost::asio::ip::tcp::endpoint& peer) const noexcept {
        try {
            return !filter_ || filter_(peer);
        } catch (...) {
            return false;
        }
    }

    /// One open stream, counted until the slot is destroyed (its stream
    /// closes); null when max_open_ streams are open already.
    std::shared_ptr<void> take_slot() {
        std::size_t n = open_.load(std::memory_order_relaxed);
        do {
            if (n >= max_open_)
                return nullptr;
        } while (!open_.compare_exchange_weak(n, n + 1, std::memory_order_relaxed));
        return std::make_shared<open_slot>(shared_from_this());
    }

    void count_refused() noexcept { refused_.fetch_add(1, std::memory_order_relaxed); }

    std::size_t open() const noexcept { return open_.load(std::memory_order_relaxed); }
    std::uint64_t refused() const noexcept { return refused_.load(std::memory_order_relaxed); }

private:
    /// Holds its admission alive: the stream may outlive the acceptor.
    struct open_slot {
        explicit open_slot(std::shared_ptr<accept_admission> owner) noexcept
            : owner_(std::move(owner)) {}
        open_slot(const open_slot&) = delete;
        open_slot& operator=(const open_slot&) = delete;
        ~open_slot() { owner_->open_.fetch_sub(1, std::memory_order_relaxed); }
        std::shared_ptr<accept_admission> owner_;
    };

    /// Atomic: streams close on any thread.
    std::atomic<std::size_t> open_{0};
    std::atomic<std::uint64_t> refused_{0};
};

} // namespace corio::detail
