#pragma once

#include <cstddef>
#include <mutex>

#include <sys/uio.h>

#include <boost/asio/error.hpp>
#include <boost/system/error_code.hpp>

#include <corio/detail/rpoll_operation.hpp>
#include <corio/detail/socket_control.hpp>
#include <corio/detail/socket_impl.hpp>
#include <corio/detail/try_call.hpp>

namespace corio::detail {

/// read_some or write_some (receive or send with `flags`) on a
/// non_blocking(true) socket: one nonblocking call,
/// boost::asio::error::would_block when it would wait.
///
/// Inline, in a header of its own: it is the whole of a non-blocking
/// read_some or write_some between the stream and the seam, and as a call
/// of its own (it was one, in socket_control.cpp) it and the levels above
/// it cost about 16 instructions per call more than this one function
/// does (host callgrind, doc/performance.md, session 19).
[[gnu::always_inline]] inline std::size_t
try_transfer(socket_impl& impl, wait_kind kind, const iovec* iov, int count, std::size_t total,
             boost::system::error_code& ec, int flags = 0) {
    if (total == 0) [[unlikely]] {
        std::lock_guard io_lock(impl.io_mutex_);
        ec = impl.socket_.is_valid()
                 ? boost::system::error_code()
                 : boost::system::error_code(boost::asio::error::bad_descriptor);
        return 0;
    }
    return try_call(
        impl, kind,
        [&](boost::system::error_code& call_ec) {
            return transfer_once(*impl.socket_.ops(), impl.socket_.get(), kind, iov, count, flags,
                                 call_ec);
        },
        ec);
}

} // namespace corio::detail
