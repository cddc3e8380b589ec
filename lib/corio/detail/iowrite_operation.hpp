#pragma once

#include <tuple>

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>

#include <corio/detail/handler_operation.hpp>
#include <corio/error.hpp>

namespace corio::detail {

/// async_iowrite: riowrite into a mapping the peer published, until the
/// whole buffer is written. Each run makes nonblocking riowrite calls until
/// one would block; the mapping is checked before the first call, so a write
/// that does not fit never reaches rdma-core (v44 loops forever on one).
template <class Handler, class IoExecutor>
class iowrite_operation final
    : public handler_operation<iowrite_operation<Handler, IoExecutor>, Handler, IoExecutor> {
public:
    iowrite_operation(rpoll_service& service, std::shared_ptr<socket_impl> impl,
                      boost::asio::const_buffer buffer, off_t remote_offset, Handler handler,
                      const IoExecutor& io_executor)
        : iowrite_operation::handler_operation(wait_kind::write, service, std::move(impl),
                                               std::move(handler), io_executor),
          buffer_(buffer), remote_offset_(remote_offset) {}

    bool perform(socket_impl& impl) override {
        if (auto* stall = impl.stall_.load(std::memory_order_acquire)) [[unlikely]]
            return stall->perform(this->ec_, this->bytes_, [&] { return write(impl); });
        return write(impl);
    }

    auto results() { return std::tuple(this->ec_, this->bytes_); }

private:
    bool write(socket_impl& impl) {
        const auto* mapping = impl.find_remote_mapping(remote_offset_);
        if (mapping == nullptr) {
            this->ec_ = corio::error::no_remote_mapping;
            return true;
        }
        const socket_ops& ops = *impl.socket_.ops();
        while (this->bytes_ < buffer_.size()) {
            const auto* data = static_cast<const char*>(buffer_.data()) + this->bytes_;
            const std::size_t n =
                ops.iowrite(impl.socket_.get(), data, buffer_.size() - this->bytes_,
                            remote_offset_ + static_cast<off_t>(this->bytes_), *mapping, 0,
                            this->ec_);
            if (this->ec_ == boost::asio::error::would_block ||
                this->ec_ == boost::asio::error::try_again)
                return false;
            if (this->ec_)
                return true;
            this->bytes_ += n;
        }
        return true;
    }

    boost::asio::const_buffer buffer_;
    off_t remote_offset_;
};

} // namespace corio::detail
