#pragma once

#include <tuple>

#include <boost/asio/error.hpp>

#include <corio/detail/buffer_iovecs.hpp>
#include <corio/detail/handler_operation.hpp>

namespace corio::detail {

/// async_read_some (Kind read: one nonblocking readv) and async_write_some
/// (Kind write: one nonblocking writev).
template <wait_kind Kind, class BufferSequence, class Handler, class IoExecutor>
class transfer_operation final
    : public handler_operation<transfer_operation<Kind, BufferSequence, Handler, IoExecutor>,
                               Handler, IoExecutor> {
public:
    transfer_operation(rpoll_service& service, std::shared_ptr<socket_impl> impl,
                       const BufferSequence& buffers, Handler handler,
                       const IoExecutor& io_executor)
        : transfer_operation::handler_operation(Kind, service, std::move(impl),
                                                std::move(handler), io_executor),
          buffers_(buffers) {}

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
        const socket_ops& ops = *impl.socket_.ops();
        if constexpr (Kind == wait_kind::read)
            this->bytes_ = ops.readv(impl.socket_.get(), iov.data(), iov.count(), this->ec_);
        else
            this->bytes_ = ops.writev(impl.socket_.get(), iov.data(), iov.count(), this->ec_);
        return this->ec_ != boost::asio::error::would_block &&
               this->ec_ != boost::asio::error::try_again;
    }

    BufferSequence buffers_;
};

} // namespace corio::detail
