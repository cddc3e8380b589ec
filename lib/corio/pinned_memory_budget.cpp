#include <corio/pinned_memory_budget.hpp>

#include <corio/error.hpp>

namespace corio {

boost::asio::execution_context::id pinned_memory_budget::id;

boost::system::error_code pinned_memory_budget::reserve(std::uint64_t bytes) noexcept {
    std::uint64_t used = in_use_.load(std::memory_order_relaxed);
    do {
        const std::uint64_t cap = limit();
        if (used > cap || bytes > cap - used)
            return error::pinned_memory_budget_exhausted;
    } while (!in_use_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
    return {};
}

} // namespace corio
