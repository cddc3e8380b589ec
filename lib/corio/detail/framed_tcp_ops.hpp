#pragma once

#include <boost/system/error_code.hpp>

#include <corio/detail/socket_ops.hpp>
#include <corio/detail/unique_socket.hpp>

namespace corio::detail {

/// Kernel TCP sockets that emulate riomap/riowrite with a framed protocol
/// (doc/tcp-transport.md). A tcp socket moves to this table when it connects
/// or listens with corio::socket_base::iomap_size above zero; sockets it
/// accepts use it too. Each descriptor's state is a framed_tcp_socket.
extern const socket_ops framed_tcp_ops;

namespace framed_tcp {

/// True for the (level, name) of RDMA_IOMAPSIZE, the one RDMA option the
/// tcp transport records.
bool is_iomap_size_option(int level, int name) noexcept;

/// posix_socket_ops' setsockopt and getsockopt of RDMA_IOMAPSIZE: records
/// the value for `fd` (rounded as rsockets round it), or reads it back (0 if
/// never set). invalid_argument for a bad value or length, and for a socket
/// that is connected already.
boost::system::error_code set_iomap_size(int fd, const void* value, socklen_t len);
boost::system::error_code get_iomap_size(int fd, void* value, socklen_t* len);

/// posix_socket_ops' close: forgets what was recorded for `fd`.
void forget(int fd) noexcept;

/// Moves a kernel socket whose iomap_size was set above zero to
/// framed_tcp_ops; call before connect or listen. Other sockets are left as
/// they are.
void adopt_if_requested(unique_socket& socket);

} // namespace framed_tcp

} // namespace corio::detail
