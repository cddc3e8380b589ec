#include "corio/detail/framed_tcp_socket.hpp"

#include <algorithm>
#include <cstring>

#include <sys/socket.h>

#include <boost/asio/error.hpp>

#include <corio/detail/posix_socket_ops.hpp>
#include <corio/error.hpp>

namespace corio::detail {

using boost::system::error_code;
namespace frame = tcp_frame;

namespace {

/// buffer_iovecs cuts a sequence at 64 buffers; one more part for a header
/// before them and one for a lookahead header after them.
constexpr int max_user_parts = 64;
constexpr int max_parts = max_user_parts + 2;

std::size_t total(const iovec* iov, int count) noexcept {
    std::size_t n = 0;
    for (int i = 0; i < count; ++i)
        n += iov[i].iov_len;
    return n;
}

/// The bytes [skip, skip + limit) of `iov`, as at most max_user_parts
/// entries appended to `out` at `count`. Returns how many bytes they hold.
std::size_t slice(const iovec* iov, int iovcnt, std::size_t skip, std::size_t limit, iovec* out,
                  int& count) noexcept {
    std::size_t taken = 0;
    int used = 0;
    for (int i = 0; i < iovcnt && taken < limit && used < max_user_parts; ++i) {
        std::size_t len = iov[i].iov_len;
        if (skip >= len) {
            skip -= len;
            continue;
        }
        const std::size_t n = std::min(len - skip, limit - taken);
        out[count++] = {static_cast<char*>(iov[i].iov_base) + skip, n};
        ++used;
        taken += n;
        skip = 0;
    }
    return taken;
}

} // namespace

framed_tcp_socket::framed_tcp_socket(int iomap_size) noexcept
    : iomap_size_(iomap_size), mappings_(static_cast<std::size_t>(iomap_size)) {}

int framed_tcp_socket::iomap_size() const {
    std::lock_guard lock(mutex_);
    return iomap_size_;
}

error_code framed_tcp_socket::set_iomap_size(int value) {
    std::lock_guard lock(mutex_);
    // rsockets send the size to the peer while connecting; so does the
    // hello here, and then it is too late, as on rsockets.
    if (started_)
        return boost::asio::error::invalid_argument;
    iomap_size_ = value;
    mappings_.set_limit(static_cast<std::size_t>(value));
    return {};
}

void framed_tcp_socket::start() {
    std::lock_guard lock(mutex_);
    if (started_)
        return;
    started_ = true;
    const auto hello = frame::encode_hello(static_cast<std::uint32_t>(iomap_size_));
    std::copy(hello.begin(), hello.end(), owed_.begin());
    owed_begin_ = 0;
    owed_end_ = hello.size();
}

bool framed_tcp_socket::started() const {
    std::lock_guard lock(mutex_);
    return started_;
}

void framed_tcp_socket::fail_connection(int fd) {
    // The descriptor belongs to whoever opened it and is closed by them; a
    // shutdown tells the peer now, and failure_ answers every later call.
    (void)posix_socket_ops.shutdown(fd, SHUT_RDWR);
    open_ = open_frame::none;
    remaining_ = 0;
    owed_begin_ = owed_end_ = 0;
}

bool framed_tcp_socket::flush_owed(int fd, error_code& ec) {
    while (owed_begin_ < owed_end_) {
        const std::size_t n =
            posix_socket_ops.send(fd, owed_.data() + owed_begin_, owed_end_ - owed_begin_, 0, ec);
        if (ec)
            return false;
        owed_begin_ += n;
    }
    owed_begin_ = owed_end_ = 0;
    return true;
}

bool framed_tcp_socket::pad_iowrite(int fd, error_code& ec) {
    // An iowrite frame left short (its operation was cancelled, or the next
    // iowrite went elsewhere) must still be completed before anything else.
    // Its range was declared and checked by the peer, inside a mapping this
    // side was writing to anyway, so zeros there harm nothing else.
    static const std::array<std::byte, 4096> zeros{};
    while (remaining_ > 0) {
        const std::size_t n =
            posix_socket_ops.send(fd, zeros.data(), std::min(remaining_, zeros.size()), 0, ec);
        if (ec)
            return false;
        remaining_ -= n;
        next_offset_ += n;
    }
    open_ = open_frame::none;
    return true;
}

std::size_t framed_tcp_socket::write_frame(int fd, frame::frame_type type, const iovec* iov,
                                           int iovcnt, std::size_t length, std::uint64_t offset,
                                           error_code& ec) {
    std::array<iovec, max_parts> parts;
    int count = 1;
    // The slice is shorter than asked only when the caller gave more than 64
    // buffers; the header declares what really follows it.
    length = slice(iov, iovcnt, 0, length, parts.data(), count);
    const auto header = frame::encode_header(type, static_cast<std::uint32_t>(length), offset);
    parts[0] = {const_cast<std::byte*>(header.data()), header.size()};

    const std::size_t n = posix_socket_ops.writev(fd, parts.data(), count, ec);
    if (ec)
        return 0; // nothing was sent, nothing is committed
    open_ = type == frame::frame_type::data ? open_frame::data : open_frame::iowrite;
    if (n < header.size()) {
        // Committed to a frame of `length`, but the kernel took part of the
        // header only: the rest is owed, and no payload was sent.
        std::copy(header.begin() + static_cast<std::ptrdiff_t>(n), header.end(), owed_.begin());
        owed_begin_ = 0;
        owed_end_ = header.size() - n;
        remaining_ = length;
        next_offset_ = offset;
        ec = boost::asio::error::would_block;
        return 0;
    }
    const std::size_t payload = n - header.size();
    remaining_ = length - payload;
    next_offset_ = offset + payload;
    if (remaining_ == 0)
        open_ = open_frame::none;
    if (payload == 0)
        ec = boost::asio::error::would_block;
    return payload;
}

std::size_t framed_tcp_socket::send(int fd, const iovec* iov, int iovcnt, error_code& ec) {
    std::lock_guard lock(mutex_);
    ec.clear();
    if (failure_) {
        ec = failure_;
        return 0;
    }
    if (!started_) {
        ec = boost::asio::error::not_connected;
        return 0;
    }
    const std::size_t wanted = total(iov, iovcnt);
    if (wanted == 0)
        return 0;
    if (!flush_owed(fd, ec))
        return 0;
    if (open_ == open_frame::iowrite && !pad_iowrite(fd, ec))
        return 0;
    if (open_ == open_frame::data) {
        // The open data frame's missing payload is whatever the stream sends
        // next: these bytes.
        std::array<iovec, max_parts> parts;
        int count = 0;
        (void)slice(iov, iovcnt, 0, remaining_, parts.data(), count);
        const std::size_t n = posix_socket_ops.writev(fd, parts.data(), count, ec);
        if (ec)
            return 0;
        remaining_ -= n;
        if (remaining_ == 0)
            open_ = open_frame::none;
        return n;
    }
    return write_frame(fd, frame::frame_type::data, iov, iovcnt,
                       std::min<std::size_t>(wanted, frame::max_payload), 0, ec);
}

std::size_t framed_tcp_socket::iowrite(int fd, const void* buf, std::size_t count, off_t offset,
                                       const remote_mapping& target, error_code& ec) {
    std::lock_guard lock(mutex_);
    ec.clear();
    if (failure_) {
        ec = failure_;
        return 0;
    }
    if (count == 0)
        return 0;
    // The same guard as on rsockets: the caller names the peer mapping it
    // targets, and a write that does not fit is refused before any byte goes.
    if (offset < 0 || !target.contains(offset, count)) {
        ec = error::iowrite_out_of_bounds;
        return 0;
    }
    if (!started_) {
        ec = boost::asio::error::not_connected;
        return 0;
    }
    if (!flush_owed(fd, ec))
        return 0;
    if (open_ == open_frame::data) {
        // The stream owes the peer the rest of a data frame, and only the
        // application's next stream bytes can fill it.
        ec = error::stream_write_unfinished;
        return 0;
    }
    const auto at = static_cast<std::uint64_t>(offset);
    iovec part{const_cast<void*>(buf), count};
    if (open_ == open_frame::iowrite) {
        if (at == next_offset_) {
            iovec rest{part.iov_base, std::min(count, remaining_)};
            const std::size_t n = posix_socket_ops.writev(fd, &rest, 1, ec);
            if (ec)
                return 0;
            remaining_ -= n;
            next_offset_ += n;
            if (remaining_ == 0)
                open_ = open_frame::none;
            return n;
        }
        if (!pad_iowrite(fd, ec))
            return 0;
    }
    return write_frame(fd, frame::frame_type::iowrite, &part, 1,
                       std::min<std::size_t>(count, frame::max_payload), at, ec);
}

std::size_t framed_tcp_socket::available(int fd, error_code& ec) {
    std::lock_guard lock(mutex_);
    ec = failure_;
    if (ec || parser_.next() != tcp_frame_parser::stage::stream_payload)
        return 0;
    const std::size_t in_kernel = posix_socket_ops.available(fd, ec);
    return std::min(in_kernel, parser_.payload_remaining());
}

std::size_t framed_tcp_socket::receive(int fd, const iovec* iov, int iovcnt, error_code& ec,
                                      bool peek) {
    std::lock_guard lock(mutex_);
    ec.clear();
    if (failure_) {
        ec = failure_;
        return 0;
    }
    if (!started_) {
        ec = boost::asio::error::not_connected;
        return 0;
    }
    {
        // This side's hello goes out even when it only ever reads.
        error_code ignored;
        (void)flush_owed(fd, ignored);
    }
    const std::size_t wanted = total(iov, iovcnt);
    if (wanted == 0)
        return 0;
    std::size_t delivered = 0;
    using stage = tcp_frame_parser::stage;
    for (;;) {
        const stage at = parser_.next();
        error_code step_ec = parser_.error();
        std::size_t asked = 0;
        std::size_t payload_part = 0;
        std::size_t n = 0;
        if (!step_ec) {
            std::array<iovec, max_parts> parts;
            int count = 0;
            if (at == stage::hello || at == stage::header) {
                const auto space = parser_.header_space();
                parts[count++] = {space.data(), space.size()};
            } else {
                const std::size_t left = parser_.payload_remaining();
                if (at == stage::stream_payload) {
                    if (delivered == wanted)
                        break;
                    payload_part = slice(iov, iovcnt, delivered, std::min(left, wanted - delivered),
                                         parts.data(), count);
                    if (peek) {
                        // The kernel keeps the bytes; the parser stays in
                        // this frame, so the next receive returns them again.
                        error_code read_ec;
                        n = posix_socket_ops.recvmsg(fd, parts.data(), count, MSG_PEEK, read_ec);
                        if (!read_ec)
                            return n;
                        if (read_ec == boost::asio::error::eof)
                            read_ec = parser_.end_of_stream();
                        if (read_ec != boost::asio::error::eof &&
                            read_ec != boost::asio::error::would_block &&
                            read_ec != boost::asio::error::try_again) {
                            failure_ = read_ec;
                            fail_connection(fd);
                        }
                        ec = read_ec;
                        return 0;
                    }
                } else {
                    parts[count++] = {parser_.mapping_destination(), left};
                    payload_part = left;
                }
                // Reading the next header in the same call saves a system
                // call per frame.
                if (payload_part == left) {
                    const auto look = parser_.lookahead_space();
                    parts[count++] = {look.data(), look.size()};
                }
            }
            asked = total(parts.data(), count);
            error_code read_ec;
            n = posix_socket_ops.readv(fd, parts.data(), count, read_ec);
            if (read_ec == boost::asio::error::eof) {
                step_ec = parser_.end_of_stream();
                if (step_ec == boost::asio::error::eof) {
                    if (delivered > 0)
                        break;
                    ec = step_ec;
                    return 0;
                }
            } else if (read_ec) {
                // would_block included: the bytes so far are the result.
                if (delivered > 0)
                    break;
                ec = read_ec;
                return 0;
            } else if (at == stage::hello || at == stage::header) {
                step_ec = parser_.header_received(n);
            } else {
                const std::size_t p = std::min(n, payload_part);
                parser_.payload_received(p);
                if (at == stage::stream_payload)
                    delivered += p;
                if (n > p)
                    step_ec = parser_.header_received(n - p);
            }
        }
        if (step_ec) {
            // A protocol error: the connection is over. Bytes delivered
            // before it stand; the error answers the next call.
            failure_ = step_ec;
            fail_connection(fd);
            if (delivered > 0)
                break;
            ec = step_ec;
            return 0;
        }
        if (n < asked) {
            // The kernel had no more; poll will say when it has.
            if (delivered > 0)
                break;
            ec = boost::asio::error::would_block;
            return 0;
        }
    }
    return delivered;
}

off_t framed_tcp_socket::iomap(void* buf, std::size_t len, int prot, off_t offset,
                               error_code& ec) {
    std::lock_guard lock(mutex_);
    off_t mapped = -1;
    ec = mappings_.add(buf, len, prot, offset, mapped);
    return ec ? -1 : mapped;
}

error_code framed_tcp_socket::iounmap(void* buf, std::size_t len) {
    std::lock_guard lock(mutex_);
    const auto ec = mappings_.remove(buf, len);
    if (!ec)
        parser_.mapping_removed(buf, len);
    return ec;
}

void framed_tcp_socket::flush(int fd) {
    std::lock_guard lock(mutex_);
    if (failure_ || !started_)
        return;
    error_code ec;
    if (flush_owed(fd, ec) && open_ == open_frame::iowrite)
        (void)pad_iowrite(fd, ec);
}

} // namespace corio::detail
