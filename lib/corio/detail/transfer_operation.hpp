#pragma once

#include <tuple>

#include <boost/asio/error.hpp>

#include <corio/detail/buffer_iovecs.hpp>
#include <corio/detail/handler_operation.hpp>
#include <corio/detail/socket_control.hpp>

namespace corio::detail {

/// async_read_some (Kind read: one nonblocking readv) and async_write_some
/// (Kind write: one nonblocking writev); with MSG_* `flags`, async_receive
/// and async_send (recvmsg and sendmsg).
template <wait_kind Kind, class BufferSequence, class Handler, class IoExecutor>
class transfer_operation final
    : public handler_operation<transfer_operation<Kind, BufferSequence, Handler, IoExecutor>,
                               Handler, IoExecutor> {
public:
    transfer_operation(rpoll_service& service, std::shared_ptr<socket_impl> impl,
                       const BufferSequence& buffers, Handler handler,
                       const IoExecutor& io_executor, int flags = 0)
        : transfer_operation::handler_operation(Kind, service, std::move(impl),
                                                std::move(handler), io_executor),
          buffers_(buffers), flags_(flags) {}

    bool perform(socket_impl& impl) override {
        if (auto* stall = impl.stall_.load(std::memory_order_acquire)) [[unlikely]]
            return stall->perform(this->ec_, this->bytes_, [&] { return transfer(impl); });
        return transfer(impl);
    }

    auto results() { return std::tuple(this->ec_, this->bytes_); }

private:
    bool transfer(socket_impl& impl) {
        const buffer_iovecs iov(buffers_);
        // Moving nothing completes at once, as with Asio's sockets.
        if (iov.total_size() == 0) {
            this->ec_.clear();
            this->bytes_ = 0;
            return true;
        }
        this->bytes_ = transfer_once(*impl.socket_.ops(), impl.socket_.get(), Kind, iov.data(),
                                     iov.count(), flags_, this->ec_);
        return this->ec_ != boost::asio::error::would_block &&
               this->ec_ != boost::asio::error::try_again;
    }

    BufferSequence buffers_;
    int flags_;
};

} // namespace corio::detail
