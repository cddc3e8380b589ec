#include "corio/iomap_registration.hpp"

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
    region_ = region;
    impl_ = std::move(impl);
}

boost::system::error_code iomap_registration::reset() noexcept {
    if (!impl_)
        return {};
    auto impl = std::move(impl_);
    std::lock_guard io_lock(impl->io_mutex_);
    if (!impl->socket_.is_valid())
        return {};
    return impl->socket_.ops()->iounmap(impl->socket_.get(), region_.data(), region_.size());
}

} // namespace corio
