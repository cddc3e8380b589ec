#pragma once

#include <tuple>

#include <sys/socket.h>

#include <boost/asio/error.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <corio/detail/handler_operation.hpp>
#include <corio/detail/socket_control.hpp>

namespace corio::detail {

/// async_connect after the nonblocking connect call said in_progress: once
/// the socket is writable, SO_ERROR tells how the connect ended. After a
/// deferred call (connect_state::deferred) the operation makes the call
/// again on each of the service's ticks until it starts, then waits as above.
template <class Handler, class IoExecutor>
class connect_operation final
    : public handler_operation<connect_operation<Handler, IoExecutor>, Handler, IoExecutor> {
public:
    connect_operation(rpoll_service& service, std::shared_ptr<socket_impl> impl, Handler handler,
                      const IoExecutor& io_executor, const boost::asio::ip::tcp::endpoint& peer)
        : connect_operation::handler_operation(wait_kind::write, service, std::move(impl),
                                               std::move(handler), io_executor),
          peer_(peer) {}

    /// Set by the initiation from connect()'s first call.
    void set_result(const boost::system::error_code& ec, connect_state state) noexcept {
        this->ec_ = ec;
        connect_state_ = state;
    }

    bool perform(socket_impl& impl) override {
        if (connect_state_ == connect_state::deferred) {
            this->ec_ = retry_connect(this->service_, impl, peer_, connect_state_);
            return connect_state_ == connect_state::finished;
        }
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

private:
    const boost::asio::ip::tcp::endpoint peer_;
    connect_state connect_state_ = connect_state::finished;
};

} // namespace corio::detail
