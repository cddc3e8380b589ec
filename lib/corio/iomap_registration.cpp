#include "corio/iomap_registration.hpp"

#include <algorithm>
#include <utility>

#include <boost/asio/error.hpp>

namespace corio {

iomap_registration::iomap_registration(std::shared_ptr<detail::socket_impl> impl,
                                       boost::asio::mutable_buffer region, int prot, off_t offset,
                                       boost::system::error_code& ec) {
    std::lock_guard io_lock(impl->io_mutex_);
    if (!impl->socket_.is_valid()) {
        ec = boost::asio::error::bad_descriptor;
        return;
    }
    offset_ = impl->socket_.ops()->iomap(impl->socket_.get(), region.data(), region.size(), prot,
                                         offset, ec);
    if (ec)
        return;
    impl->local_regions_.emplace_back(region.data(), region.size());
    region_ = region;
    impl_ = std::move(impl);
}

boost::system::error_code iomap_registration::reset() noexcept {
    if (!impl_)
        return {};
    auto impl = std::move(impl_);
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
