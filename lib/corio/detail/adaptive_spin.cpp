#include "corio/detail/adaptive_spin.hpp"

#include <poll.h>
#include <sched.h>

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
    if (!enabled_.load(std::memory_order_relaxed) ||
        impl.socket_.ops() != &rsocket_ops ||
        impl.phase_.load(std::memory_order_relaxed) != socket_impl::phase::connected)
        return false;
    auto& history = impl.spin_history_for(kind);
    const auto spin = history.next_spin(budget);
    if (spin.count() == 0) {
        if (history.idle())
            history.start_unspun_wait(std::chrono::steady_clock::now());
        return false;
    }
    const short events = kind == wait_kind::read ? POLLIN : kind == wait_kind::write ? POLLOUT
                                                                                     : POLLPRI;
    // The clock is read once per few polls: an rpoll of one socket costs
    // about as much as reading it.
    constexpr int polls_per_clock = 4;
    // A trial waits for a peer that was idle too: its answer needs the
    // peer's poller thread, its io thread and the kernel's completion work
    // to run, and with few CPUs some of them queue behind this spin. So a
    // trial's spin yields between looks; in the Soft-RoCE guest (two vCPUs)
    // trials then found the answer 136 times in 140, against 118 in 156
    // without (doc/performance.md, "Two idle ends").
    const bool yield_between_looks = history.trial_spin();
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start + spin;
    do {
        for (int i = 0; i < polls_per_clock; ++i) {
            pollfd fd{impl.socket_.get(), events, 0};
            boost::system::error_code ec;
            // Ready, or an error the operation's own call will report.
            if (rsocket_ops.poll(&fd, 1, poll_timeout::immediate, ec) > 0 || ec) {
                history.hit(std::chrono::steady_clock::now() - start);
                return true;
            }
            if (yield_between_looks)
                sched_yield();
        }
    } while (std::chrono::steady_clock::now() < deadline);
    history.miss();
    return false;
}

void adaptive_spin::wait_answered(socket_impl& impl, wait_kind kind) const noexcept {
    auto& history = impl.spin_history_for(kind);
    if (history.unspun_wait_pending())
        history.end_unspun_wait(std::chrono::steady_clock::now(), budget());
}

} // namespace corio::detail
