#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include <sys/mman.h>
#include <sys/types.h>

#include <boost/asio/buffer.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

#include <corio/basic_stream.hpp>
#include <corio/detail/socket_impl.hpp>
#include <corio/detail/stream_access.hpp>
#include <corio/error.hpp>
#include <corio/memlock_limit.hpp>
#include <corio/pinned_memory_budget.hpp>

namespace corio {

/// One region of this side's memory that the peer may write into with
/// async_iowrite (rsockets' riomap), unmapped (riounmap) on destruction.
///
/// rsockets publish a new mapping to the peer only with this side's next send
/// or iowrite on the stream, and never tell the peer of an unmapping: the
/// application's protocol says when the peer may start and must stop
/// writing. Both ends' sockets must have had corio::socket_base::iomap_size
/// set before connect (on an acceptor, before listen), to at least the
/// number of PROT_WRITE mappings either end holds at once: on rsockets this
/// side's mappings are announced into a table the peer keeps, so the peer's
/// iomap_size is what bounds them (error::iomap_slots_exhausted beyond it,
/// and at once when the peer set none); on the tcp emulation this side's own
/// does.
///
/// The region's pinned size (whole pages) is taken from the stream's
/// corio::pinned_memory_budget first (pinned_memory_budget_exhausted when it
/// has no room) and, on rsockets, checked against RLIMIT_MEMLOCK
/// (memlock_limit_exceeded, where rdma-core would say ENOMEM); both before
/// rdma-core is asked. The budget gets it back on unmapping.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: unsafe.
class iomap_registration {
public:
    iomap_registration() noexcept = default;

    /// Maps `region` on `stream`'s socket at `offset` (-1: rsockets choose,
    /// the region's address). `prot` is PROT_WRITE (the peer may write) or
    /// PROT_NONE. Throws boost::system::system_error; for
    /// memlock_limit_exceeded its what() is memlock_diagnostic's line.
    template <class Executor>
    iomap_registration(basic_stream<Executor>& stream, boost::asio::mutable_buffer region,
                       int prot = PROT_WRITE, off_t offset = 0) {
        boost::system::error_code ec;
        *this = iomap_registration(stream, region, prot, offset, ec);
        if (ec == error::memlock_limit_exceeded)
            throw boost::system::system_error(
                ec, "riomap: " + memlock_diagnostic(pinned_size(region.data(), region.size())));
        detail::throw_if(ec, "riomap");
    }

    /// As the overload above, but reports a failure in `ec` instead of throwing.
    template <class Executor>
    iomap_registration(basic_stream<Executor>& stream, boost::asio::mutable_buffer region, int prot,
                       off_t offset, boost::system::error_code& ec)
        : iomap_registration(detail::stream_access::shared_impl(stream),
                             pinned_memory_budget_of(stream.get_executor()), region, prot, offset,
                             ec) {}

    /// Takes over `other`'s mapping; `other` is left unmapped.
    iomap_registration(iomap_registration&& other) noexcept
        : impl_(std::move(other.impl_)), budget_(std::exchange(other.budget_, nullptr)),
          reserved_(std::exchange(other.reserved_, 0)), region_(std::exchange(other.region_, {})),
          offset_(other.offset_) {}

    /// Unmaps this registration's region, then takes over `other`'s mapping.
    iomap_registration& operator=(iomap_registration&& other) noexcept {
        if (this != &other) {
            (void)reset();
            impl_ = std::move(other.impl_);
            budget_ = std::exchange(other.budget_, nullptr);
            reserved_ = std::exchange(other.reserved_, 0);
            region_ = std::exchange(other.region_, {});
            offset_ = other.offset_;
        }
        return *this;
    }

    iomap_registration(const iomap_registration&) = delete;
    iomap_registration& operator=(const iomap_registration&) = delete;

    ~iomap_registration() { (void)reset(); }

    /// Where the peer addresses this region in its iowrites.
    off_t offset() const noexcept { return offset_; }
    /// The size of the mapped region, in bytes.
    std::size_t size() const noexcept { return region_.size(); }
    /// The start of the mapped region.
    void* data() const noexcept { return region_.data(); }
    /// True from a successful mapping until reset() or destruction.
    bool is_mapped() const noexcept { return impl_ != nullptr; }

    /// Unmaps now. A stream closed meanwhile took its mappings with it: that
    /// is not an error.
    boost::system::error_code reset() noexcept;

private:
    iomap_registration(std::shared_ptr<detail::socket_impl> impl, pinned_memory_budget& budget,
                       boost::asio::mutable_buffer region, int prot, off_t offset,
                       boost::system::error_code& ec);

    std::shared_ptr<detail::socket_impl> impl_;
    /// Where reserved_ bytes came from; the budget is the context's service,
    /// which outlives every stream of the context.
    pinned_memory_budget* budget_ = nullptr;
    std::uint64_t reserved_ = 0;
    boost::asio::mutable_buffer region_;
    off_t offset_ = 0;
};

} // namespace corio
