#pragma once

#include <corio/detail/socket_ops.hpp>

namespace corio::detail {

/// rdma-core's rsockets behind the socket_ops interface. rsocket_ops.cpp is
/// the only file in corio that calls an rsocket function, so every v44 quirk
/// is handled in one place.
extern const socket_ops rsocket_ops;

} // namespace corio::detail
