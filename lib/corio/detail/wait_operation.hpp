#pragma once

#include <tuple>
#include <utility>

#include <poll.h>

#include <boost/system/error_code.hpp>

#include <corio/detail/handler_operation.hpp>
#include <corio/detail/socket_ops.hpp>

namespace corio::detail {

/// async_wait: completes once the socket is ready for `kind` (read, write,
/// or error: POLLPRI, POLLERR, POLLHUP), making no call of its own, as
/// Asio's reactive_wait_op. perform() answers from what is already known
/// when it can, and otherwise asks the socket with a poll of timeout 0:
///  - after a report that the socket is ready for the kind (the poller's or
///    the reactor's event), that report is the answer, as for Asio's own
///    async_wait: a call made later may still find nothing, if another call
///    took what was there in between;
///  - on the first try right after a nonblocking call of the kind said
///    would_block (socket_impl::would_block_note), the answer is "not yet"
///    with no look: whatever arrives after that call raises a report. This
///    is the try-then-wait loop that non_blocking(true) is for, and it then
///    makes no system call beyond Asio's;
///  - otherwise it looks, so that a socket already ready completes the wait
///    at once and a report that proves nothing (an early end of a reactor
///    wait, an accept retry tick) is checked.
template <class Handler, class IoExecutor>
class wait_operation final
    : public handler_operation<wait_operation<Handler, IoExecutor>, Handler, IoExecutor> {
public:
    wait_operation(wait_kind kind, rpoll_service& service, std::shared_ptr<socket_impl> impl,
                   Handler handler, const IoExecutor& io_executor)
        : wait_operation::handler_operation(kind, service, std::move(impl), std::move(handler),
                                            io_executor) {}

    bool perform(socket_impl& impl) override {
        if (std::exchange(this->reported_ready_, false))
            return true;
        if (impl.take_would_block_note(this->kind_))
            return false;
        const short wanted = this->kind_ == wait_kind::read    ? POLLIN
                             : this->kind_ == wait_kind::write ? POLLOUT
                                                               : POLLPRI;
        pollfd fd{impl.socket_.get(), wanted, 0};
        const std::size_t ready =
            impl.socket_.ops()->poll(&fd, 1, poll_timeout::immediate, this->ec_);
        // POLLERR, POLLHUP and POLLNVAL end every kind of wait: the next call
        // reports what happened.
        return this->ec_ || (ready > 0 && (fd.revents & (wanted | POLLERR | POLLHUP | POLLNVAL)));
    }

    auto results() { return std::tuple(this->ec_); }
};

} // namespace corio::detail
