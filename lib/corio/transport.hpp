#pragma once

#include <string_view>

#include <boost/system/error_code.hpp>

namespace corio {

namespace detail {
struct socket_ops;
}

/// Which sockets an I/O object uses.
enum class transport {
    /// rdma-core rsockets.
    rsocket,
    /// Kernel TCP sockets.
    tcp,
    /// Kernel UDP sockets: the kernel transport of datagram sockets
    /// (corio::basic_datagram_socket). Streams and acceptors refuse it.
    udp,
    /// rsocket when this host has an RDMA device (corio::rdma_available()),
    /// else tcp.
    automatic,
};

/// rsocket or tcp: what `automatic` stands for on this host.
transport resolve_transport(transport t) noexcept;

/// rsocket or udp: what `automatic` stands for on this host for datagram
/// sockets; tcp is udp's stream twin and resolves to udp too.
transport resolve_datagram_transport(transport t) noexcept;

/// "rsocket", "tcp", "udp" or "automatic".
std::string_view to_string(transport t) noexcept;

namespace detail {
/// The socket calls of a resolved transport.
const socket_ops& ops_for(transport t) noexcept;
} // namespace detail

} // namespace corio
