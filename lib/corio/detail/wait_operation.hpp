#pragma once

#include <tuple>

#include <poll.h>

#include <boost/system/error_code.hpp>

#include <corio/detail/handler_operation.hpp>
#include <corio/detail/socket_ops.hpp>

namespace corio::detail {

/// async_wait: completes once the socket is ready for `kind` (read, write,
/// or error: POLLPRI, POLLERR, POLLHUP), making no call of its own, as
/// Asio's reactive_wait_op. perform() asks the socket with a poll of
/// timeout 0, so that the first try (the socket already ready) completes
/// without waiting, and a run after the poller's report checks it again.
template <class Handler, class IoExecutor>
class wait_operation final
    : public handler_operation<wait_operation<Handler, IoExecutor>, Handler, IoExecutor> {
public:
    wait_operation(wait_kind kind, rpoll_service& service, std::shared_ptr<socket_impl> impl,
                   Handler handler, const IoExecutor& io_executor)
        : wait_operation::handler_operation(kind, service, std::move(impl), std::move(handler),
                                            io_executor) {}

    bool perform(socket_impl& impl) override {
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
