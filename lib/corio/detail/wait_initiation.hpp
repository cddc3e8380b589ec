#pragma once

#include <memory>
#include <type_traits>
#include <utility>

#include <boost/asio/error.hpp>
#include <boost/asio/socket_base.hpp>

#include <corio/detail/wait_operation.hpp>
#include <corio/rpoll_service.hpp>

namespace corio::detail {

/// The initiation of async_wait, shared by streams, datagram sockets and
/// acceptors: the I/O object hands over what the operation needs, so the
/// initiation does not depend on the object's type.
template <class Executor>
class wait_initiation {
public:
    using executor_type = Executor;

    wait_initiation(rpoll_service& service, std::shared_ptr<socket_impl> impl,
                    const Executor& executor) noexcept
        : service_(service), impl_(std::move(impl)), executor_(executor) {}

    executor_type get_executor() const noexcept { return executor_; }

    template <class Handler>
    void operator()(Handler&& handler, boost::asio::socket_base::wait_type what) const {
        using op_type = wait_operation<std::decay_t<Handler>, Executor>;
        using socket_base = boost::asio::socket_base;
        const bool known = what == socket_base::wait_read || what == socket_base::wait_write ||
                           what == socket_base::wait_error;
        const wait_kind kind = what == socket_base::wait_read    ? wait_kind::read
                               : what == socket_base::wait_write ? wait_kind::write
                                                                 : wait_kind::error;
        auto* op = op_type::create(op_type::allocator_for(handler), kind, service_, impl_,
                                   std::forward<Handler>(handler), executor_);
        if (!known) {
            op->ec_ = boost::asio::error::invalid_argument;
            op_type::finish(op);
            return;
        }
        op_type::start(op);
    }

private:
    rpoll_service& service_;
    std::shared_ptr<socket_impl> impl_;
    Executor executor_;
};

} // namespace corio::detail
