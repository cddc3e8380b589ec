#include "corio/rdma_available.hpp"

#include <sys/socket.h>

#include <corio/detail/rsocket_ops.hpp>
#include <corio/detail/unique_socket.hpp>

namespace corio {

bool rdma_available() noexcept {
    static const bool available = [] {
        boost::system::error_code ec;
        const int s = detail::rsocket_ops.open(AF_INET, SOCK_STREAM, 0, ec);
        detail::unique_socket owner(s, detail::rsocket_ops);
        return owner.is_valid();
    }();
    return available;
}

} // namespace corio
