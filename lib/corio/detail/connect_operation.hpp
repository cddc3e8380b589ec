#pragma once

#include <tuple>

#include <sys/socket.h>

#include <boost/asio/error.hpp>

#include <corio/detail/handler_operation.hpp>

namespace corio::detail {

/// async_connect after the nonblocking connect call said in_progress: once
/// the socket is writable, SO_ERROR tells how the connect ended.
template <class Handler, class IoExecutor>
class connect_operation final
    : public handler_operation<connect_operation<Handler, IoExecutor>, Handler, IoExecutor> {
public:
    connect_operation(rpoll_service& service, std::shared_ptr<socket_impl> impl, Handler handler,
                      const IoExecutor& io_executor)
        : connect_operation::handler_operation(wait_kind::write, service, std::move(impl),
                                               std::move(handler), io_executor) {}

    /// Set by the initiation when connect() itself already finished.
    void set_result(const boost::system::error_code& ec) noexcept { this->ec_ = ec; }

    bool perform(socket_impl& impl) override {
        int error = 0;
        socklen_t len = sizeof error;
        this->ec_ = impl.socket_.ops()->getsockopt(impl.socket_.get(), SOL_SOCKET, SO_ERROR,
                                                   &error, &len);
        if (!this->ec_ && error != 0)
            this->ec_.assign(error, boost::system::system_category());
        if (!this->ec_)
            impl.phase_ = socket_impl::phase::connected;
        return true;
    }

    auto results() { return std::tuple(this->ec_); }
};

} // namespace corio::detail
