#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <sys/types.h>

#include <boost/system/error_code.hpp>

namespace corio::detail {

/// This side's mappings on one socket of the TCP emulation: what riomap
/// keeps inside rsockets. The receiver checks every iowrite frame against
/// it, so no byte from the peer lands outside a PROT_WRITE mapping.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: unsafe.
class local_mappings {
public:
    /// How an iowrite of [offset, offset + length) relates to the mappings.
    enum class fit {
        inside,       ///< Wholly inside one PROT_WRITE mapping.
        unknown,      ///< No mapping holds `offset`.
        not_writable, ///< The mapping holding `offset` is PROT_NONE.
        crosses_end,  ///< Starts inside a mapping but runs past its end.
    };

    /// At most `limit` PROT_WRITE mappings at once (the socket's iomap_size).
    explicit local_mappings(std::size_t limit = 0) noexcept : limit_(limit) {}

    void set_limit(std::size_t limit) noexcept { limit_ = limit; }

    /// Adds [buf, buf + len) at `offset`; -1 chooses the buffer's address, as
    /// rsockets do. Returns where the peer addresses it in `mapped`.
    /// invalid_argument: prot other than PROT_WRITE or PROT_NONE, an empty or
    /// null region, an offset below -1, or one whose range overlaps a mapping
    /// already there; no_memory: `limit` PROT_WRITE mappings exist already.
    boost::system::error_code add(void* buf, std::size_t len, int prot, off_t offset,
                                  off_t& mapped);

    /// Removes the mapping of exactly [buf, buf + len); invalid_argument if
    /// there is none.
    boost::system::error_code remove(void* buf, std::size_t len);

    /// Where an iowrite of `length` bytes at `offset` lands. `destination`
    /// is set only for fit::inside.
    fit find(std::uint64_t offset, std::uint64_t length, std::byte*& destination) const noexcept;

    std::size_t size() const noexcept { return entries_.size(); }

private:
    struct entry {
        std::uint64_t offset;
        std::byte* base;
        std::size_t length;
        bool writable;
    };

    std::vector<entry> entries_;
    std::size_t limit_;
};

} // namespace corio::detail
