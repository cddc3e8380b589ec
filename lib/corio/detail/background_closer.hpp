#pragma once

#include <functional>

namespace corio::detail {

/// Runs blocking rsocket calls (rclose, rshutdown) off every io_context.
///
/// Jobs for one socket run in order on one thread; jobs for different
/// sockets run side by side. Serialising them deadlocks inside librdmacm
/// v44: its single connection-manager thread can block reading an event for
/// socket A that only the close of A's peer B will produce, while A's rclose
/// waits for that thread. The closer is process-wide and never joined, so
/// an io_context's destruction never waits on such a call; a call that never
/// returns costs one parked thread, not a hung application.
void run_in_background(int fd, std::function<void()> job);

} // namespace corio::detail
