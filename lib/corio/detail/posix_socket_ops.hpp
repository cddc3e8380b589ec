#pragma once

#include <corio/detail/socket_ops.hpp>

namespace corio::detail {

/// Kernel sockets behind the socket_ops interface, for the TCP transport.
/// The iomap calls report error::not_supported_by_transport: a socket that
/// sets iomap_size above zero moves to framed_tcp_ops, which emulates them.
extern const socket_ops posix_socket_ops;

} // namespace corio::detail
