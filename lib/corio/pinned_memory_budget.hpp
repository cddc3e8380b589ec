#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>

#include <boost/asio/execution_context.hpp>
#include <boost/system/error_code.hpp>

#include <corio/rpoll_service.hpp>

namespace corio {

/// The most memory corio registers for the peer's writes on one execution
/// context (that of its rpoll_service): every iomap_registration, and so
/// every zero-copy channel's region, reserves its pinned size (whole pages)
/// here before rdma-core is asked, and gives it back when unmapped. A
/// registration beyond the budget fails with
/// corio::error::pinned_memory_budget_exhausted; one the process's
/// RLIMIT_MEMLOCK has no room for, with corio::error::memlock_limit_exceeded
/// (rsockets only: kernel TCP pins nothing). Unlimited by default.
///
/// A peer cannot raise what a server pins through corio: the server chooses
/// every region's size. The budget bounds what many connections add up to.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: safe.
class pinned_memory_budget final : public boost::asio::execution_context::service {
public:
    /// Asio's use_service<> needs a static id with Boost 1.81.
    static boost::asio::execution_context::id id;
    /// The limit that never runs out: the default, and what set_limit takes
    /// to lift a limit.
    static constexpr std::uint64_t unlimited = std::numeric_limits<std::uint64_t>::max();

    /// The budget of `context`, unlimited (Asio's use_service makes it).
    explicit pinned_memory_budget(boost::asio::execution_context& context)
        : boost::asio::execution_context::service(context) {}

    /// Sets the budget in bytes; what is registered already stays.
    void set_limit(std::uint64_t bytes) noexcept { limit_.store(bytes, std::memory_order_relaxed); }
    /// The budget in bytes.
    std::uint64_t limit() const noexcept { return limit_.load(std::memory_order_relaxed); }
    /// Bytes registered now.
    std::uint64_t in_use() const noexcept { return in_use_.load(std::memory_order_relaxed); }

    /// Takes `bytes` from the budget; pinned_memory_budget_exhausted (and
    /// nothing taken) when they do not fit.
    boost::system::error_code reserve(std::uint64_t bytes) noexcept;
    /// Gives back what reserve took.
    void release(std::uint64_t bytes) noexcept {
        in_use_.fetch_sub(bytes, std::memory_order_relaxed);
    }

private:
    void shutdown() override {}

    std::atomic<std::uint64_t> limit_{unlimited};
    std::atomic<std::uint64_t> in_use_{0};
};

/// The budget of the execution context `executor`'s corio I/O objects use.
template <class Executor>
pinned_memory_budget& pinned_memory_budget_of(const Executor& executor) {
    return boost::asio::use_service<pinned_memory_budget>(rpoll_service_of(executor).context());
}

} // namespace corio
