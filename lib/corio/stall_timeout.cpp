#include "corio/stall_timeout.hpp"

#include <boost/asio/error.hpp>

#include <corio/detail/socket_impl.hpp>
#include <corio/rpoll_service.hpp>

namespace corio {

boost::system::error_code stall_timeout::apply(rpoll_service& service,
                                               detail::socket_impl& impl) const {
    return service.set_stall_timeout(impl, timeout_);
}

boost::system::error_code stall_timeout::query(const detail::socket_impl& impl) {
    if (impl.phase_ == detail::socket_impl::phase::closed)
        return boost::asio::error::bad_descriptor;
    const detail::stall_watch* stall = impl.stall_.load(std::memory_order_acquire);
    timeout_ = stall ? std::chrono::duration_cast<std::chrono::milliseconds>(stall->timeout())
                     : std::chrono::milliseconds{};
    return {};
}

} // namespace corio
