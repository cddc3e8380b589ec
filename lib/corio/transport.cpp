#include "corio/transport.hpp"

#include <corio/detail/posix_socket_ops.hpp>
#include <corio/detail/rsocket_ops.hpp>
#include <corio/rdma_available.hpp>

namespace corio {

transport resolve_transport(transport t) noexcept {
    if (t == transport::automatic)
        return rdma_available() ? transport::rsocket : transport::tcp;
    return t;
}

transport resolve_datagram_transport(transport t) noexcept {
    return resolve_transport(t) == transport::rsocket ? transport::rsocket : transport::udp;
}

std::string_view to_string(transport t) noexcept {
    switch (t) {
    case transport::rsocket:
        return "rsocket";
    case transport::tcp:
        return "tcp";
    case transport::udp:
        return "udp";
    case transport::automatic:
        break;
    }
    return "automatic";
}

namespace detail {
const socket_ops& ops_for(transport t) noexcept {
    return resolve_transport(t) == transport::rsocket ? rsocket_ops : posix_socket_ops;
}
} // namespace detail

} // namespace corio
