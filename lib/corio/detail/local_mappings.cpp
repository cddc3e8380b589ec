#include "corio/detail/local_mappings.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

#include <sys/mman.h>

#include <boost/asio/error.hpp>

namespace corio::detail {

namespace {

// [a, a + an) and [b, b + bn) share a byte; lengths are nonzero and the ends
// were checked not to wrap.
bool overlap(std::uint64_t a, std::uint64_t an, std::uint64_t b, std::uint64_t bn) noexcept {
    return a < b + bn && b < a + an;
}

} // namespace

boost::system::error_code local_mappings::add(void* buf, std::size_t len, int prot, off_t offset,
                                              off_t& mapped) {
    if ((prot != PROT_WRITE && prot != PROT_NONE) || buf == nullptr || len == 0 || offset < -1)
        return boost::asio::error::invalid_argument;
    const bool writable = prot == PROT_WRITE;
    if (writable && static_cast<std::size_t>(std::count_if(entries_.begin(), entries_.end(),
                                                           [](const entry& e) {
                                                               return e.writable;
                                                           })) >= limit_)
        return boost::asio::error::no_memory;
    const auto at = offset == -1 ? static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(buf))
                                 : static_cast<std::uint64_t>(offset);
    // Offsets travel as u64 but must read back as a nonnegative off_t.
    constexpr auto off_max = static_cast<std::uint64_t>(std::numeric_limits<off_t>::max());
    if (at > off_max || len > off_max - at)
        return boost::asio::error::invalid_argument;
    for (const auto& e : entries_)
        if (overlap(at, len, e.offset, e.length))
            return boost::asio::error::invalid_argument;
    entries_.push_back({at, static_cast<std::byte*>(buf), len, writable});
    mapped = static_cast<off_t>(at);
    return {};
}

boost::system::error_code local_mappings::remove(void* buf, std::size_t len) {
    const auto it = std::find_if(entries_.begin(), entries_.end(), [&](const entry& e) {
        return e.base == static_cast<std::byte*>(buf) && e.length == len;
    });
    if (it == entries_.end())
        return boost::asio::error::invalid_argument;
    entries_.erase(it);
    return {};
}

local_mappings::fit local_mappings::find(std::uint64_t offset, std::uint64_t length,
                                         std::byte*& destination) const noexcept {
    for (const auto& e : entries_) {
        if (offset < e.offset || offset - e.offset >= e.length)
            continue;
        if (!e.writable)
            return fit::not_writable;
        const std::uint64_t start = offset - e.offset;
        if (length > e.length - start)
            return fit::crosses_end;
        destination = e.base + start;
        return fit::inside;
    }
    return fit::unknown;
}

} // namespace corio::detail
