#include "corio/iomap_registration.hpp"

#include <algorithm>
#include <utility>

#include <boost/asio/error.hpp>

namespace corio {

iomap_registration::iomap_registration(std::shared_ptr<detail::socket_impl> impl,
                                       pinned_memory_budget& budget,
                                       boost::asio::mutable_buffer region, int prot, off_t offset,
                                       boost::system::error_code& ec) {
    std::lock_guard io_lock(impl->io_mutex_);
    if (!impl->socket_.is_valid()) {
        ec = boost::asio::error::bad_descriptor;
        return;
    }
    const std::uint64_t pinned = pinned_size(region.data(), region.size());
    if ((ec = budget.reserve(pinned)))
        return;
    // Asked before rdma-core, whose ibv_reg_mr would say only ENOMEM. Kernel
    // TCP's emulation pins nothing.
    if (impl->transport_ == transport::rsocket &&
        (ec = memlock_limit::current().check(pinned))) {
        budget.release(pinned);
        return;
    }
    offset_ = impl->socket_.ops()->iomap(impl->socket_.get(), region.data(), region.size(), prot,
                                         offset, ec);
    // The memlock limit was checked above, so a writable mapping's ENOMEM is
    // the slot table: v44's riomap says ENOMEM before ibv_reg_mr when the
    // table the peer offered is full, and the tcp emulation mirrors it.
    if (ec == boost::system::errc::not_enough_memory && prot == PROT_WRITE)
        ec = error::iomap_slots_exhausted;
    if (ec) {
        budget.release(pinned);
        return;
    }
    budget_ = &budget;
    reserved_ = pinned;
    impl->local_regions_.emplace_back(region.data(), region.size());
    region_ = region;
    impl_ = std::move(impl);
}

boost::system::error_code iomap_registration::reset() noexcept {
    if (!impl_)
        return {};
    auto impl = std::move(impl_);
    std::exchange(budget_, nullptr)->release(std::exchange(reserved_, 0));
    std::lock_guard io_lock(impl->io_mutex_);
    // Closed: close() unmapped every region already.
    if (!impl->socket_.is_valid())
        return {};
    auto& regions = impl->local_regions_;
    const auto found = std::find(regions.begin(), regions.end(), std::pair(region_.data(), region_.size()));
    if (found != regions.end())
        regions.erase(found);
    return impl->socket_.ops()->iounmap(impl->socket_.get(), region_.data(), region_.size());
}

} // namespace corio
