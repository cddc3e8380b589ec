#include "corio/detail/adaptive_spin.hpp"

#include <poll.h>

#include <corio/detail/rsocket_ops.hpp>
#include <corio/detail/socket_impl.hpp>

namespace corio::detail {

bool adaptive_spin::wait_ready(socket_impl& impl, wait_kind kind) const {
    const auto budget = this->budget();
    // Only a connected rsocket spins. In thread mode the poller thread may be
    // in an rpoll of this same socket for a wait of the other kind; rsockets
    // v44 serialise two rpolls of a connected stream socket (the completion
    // queue under cq_lock, the channel under cq_wait_lock, and a timeout-0
    // rpoll never reads the channel), but not of a connecting one, whose
    // rpoll runs rs_do_connect without the socket's locks.
    if (budget.count() == 0 || !enabled_.load(std::memory_order_relaxed) ||
        impl.socket_.ops() != &rsocket_ops ||
        impl.phase_.load(std::memory_order_relaxed) != socket_impl::phase::connected)
        return false;
    if (impl.spin_misses_ >= misses_before_idle) {
        if (++impl.spins_skipped_ < probe_interval)
            return false;
        impl.spins_skipped_ = 0;
    }
    const short events = kind == wait_kind::read ? POLLIN : kind == wait_kind::write ? POLLOUT
                                                                                     : POLLPRI;
    // The clock is read once per few polls: an rpoll of one socket costs
    // about as much as reading it.
    constexpr int polls_per_clock = 4;
    const auto deadline = std::chrono::steady_clock::now() + budget;
    do {
        for (int i = 0; i < polls_per_clock; ++i) {
            pollfd fd{impl.socket_.get(), events, 0};
            boost::system::error_code ec;
            // Ready, or an error the operation's own call will report.
            if (rsocket_ops.poll(&fd, 1, poll_timeout::immediate, ec) > 0 || ec) {
                impl.spin_misses_ = 0;
                return true;
            }
        }
    } while (std::chrono::steady_clock::now() < deadline);
    ++impl.spin_misses_;
    return false;
}

} // namespace corio::detail
