#pragma once

#include <cstddef>

#include <sys/types.h>

#include <boost/asio/error.hpp>
#include <boost/system/error_code.hpp>

#include <corio/detail/rpoll_operation.hpp>
#include <corio/detail/socket_impl.hpp>
#include <corio/detail/socket_ops.hpp>
#include <corio/detail/try_call.hpp>
#include <corio/error.hpp>

namespace corio::detail {

/// riowrite's loop into the peer's mapping that holds `offset`, from
/// `written` on, until all of `size` is written or a call fails
/// (would_block among the failures); the caller holds io_mutex_. Run by
/// try_iowrite and by blocking_iowrite, whose retries go on from `written`.
[[gnu::always_inline]] inline std::size_t iowrite_rest(socket_impl& impl, const void* data,
                                                       std::size_t size, off_t offset,
                                                       std::size_t& written,
                                                       boost::system::error_code& ec) {
    const auto* mapping = impl.find_remote_mapping(offset);
    if (mapping == nullptr) {
        ec = corio::error::no_remote_mapping;
        return 0;
    }
    const socket_ops& ops = *impl.socket_.ops();
    while (written < size) {
        const std::size_t n =
            ops.iowrite(impl.socket_.get(), static_cast<const char*>(data) + written,
                        size - written, offset + static_cast<off_t>(written), *mapping, 0, ec);
        // try_again is would_block on Linux (try_call.hpp's static_assert).
        if (ec)
            break;
        written += n;
    }
    return written;
}

/// iowrite of `size` > 0 bytes on a non_blocking(true) socket: riowrite
/// until all is written or a call would block; then the bytes written so
/// far, or boost::asio::error::would_block when none.
///
/// Inline, in a header of its own, as try_transfer is for read_some and
/// write_some: as a branch of socket_iowrite (now blocking_iowrite), a
/// non-blocking iowrite was a call through the PLT into a function that
/// also held the blocking path, 21 of whose 49 instructions per call were
/// its entry and exit (guest callgrind, doc/performance.md, session 25).
[[gnu::always_inline]] inline std::size_t try_iowrite(socket_impl& impl, const void* data,
                                                      std::size_t size, off_t offset,
                                                      boost::system::error_code& ec) {
    // try_call's call as a function object whose call is always inlined: a
    // lambda's was not (GCC 12 kept it a function of its own inside
    // coriostream's loop, 75 instructions per call on the host).
    struct call {
        socket_impl& impl;
        const void* data;
        std::size_t size;
        off_t offset;
        [[gnu::always_inline]] std::size_t operator()(boost::system::error_code& call_ec) const {
            std::size_t written = 0;
            iowrite_rest(impl, data, size, offset, written, call_ec);
            // Part written: a caller that will not wait gets the count.
            if (written > 0 && call_ec && call_ec == boost::asio::error::would_block)
                call_ec.clear();
            return written;
        }
    };
    return try_call(impl, wait_kind::write, call{impl, data, size, offset}, ec);
}

} // namespace corio::detail
