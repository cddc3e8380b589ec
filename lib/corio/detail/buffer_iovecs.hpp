#pragma once

#include <cstddef>
#include <type_traits>

#include <sys/uio.h>

#include <boost/asio/buffer.hpp>

namespace corio::detail {

/// A buffer sequence seen as the iovec array readv/writev take. Sequences
/// longer than `max_buffers` are cut there, as Asio's own sockets do: the
/// operation then moves fewer bytes, which a *_some operation may.
class buffer_iovecs {
public:
    static constexpr int max_buffers = 64;

    template <class BufferSequence>
    explicit buffer_iovecs(const BufferSequence& buffers) noexcept {
        // One buffer (mutable_buffer, const_buffer), the common case: no
        // loop over a sequence of one.
        if constexpr (std::is_convertible_v<const BufferSequence&, boost::asio::const_buffer>) {
            const boost::asio::const_buffer buffer(buffers);
            iov_[0].iov_base = const_cast<void*>(buffer.data());
            iov_[0].iov_len = buffer.size();
            total_ = buffer.size();
            count_ = total_ > 0 ? 1 : 0;
        } else {
            auto it = boost::asio::buffer_sequence_begin(buffers);
            const auto end = boost::asio::buffer_sequence_end(buffers);
            for (; it != end && count_ < max_buffers; ++it) {
                const auto buffer = boost::asio::buffer(*it);
                if (buffer.size() == 0)
                    continue;
                iov_[count_].iov_base = const_cast<void*>(static_cast<const void*>(buffer.data()));
                iov_[count_].iov_len = buffer.size();
                total_ += buffer.size();
                ++count_;
            }
        }
    }

    const iovec* data() const noexcept { return iov_; }
    int count() const noexcept { return count_; }
    std::size_t total_size() const noexcept { return total_; }

private:
    iovec iov_[max_buffers];
    int count_ = 0;
    std::size_t total_ = 0;
};

} // namespace corio::detail
