#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include <boost/asio/error.hpp>
#include <boost/system/error_code.hpp>

#include <corio/detail/rpoll_operation.hpp>
#include <corio/detail/socket_impl.hpp>

namespace corio::detail {

/// One nonblocking `call` of `kind` on a non_blocking(true) socket, under
/// its I/O mutex: bad_descriptor when closed, would_block for try_again and
/// while an rshutdown runs. A call that says would_block leaves the socket's
/// would_block_note for the wait that follows.
///
/// A template, not a function_ref: its callers are the non-blocking data
/// paths (read_some, write_some, iowrite, datagram send and receive), and a
/// call through a thunk is a call level more on every transfer. Always
/// inlined for the same reason: GCC kept read_some's and write_some's one
/// instantiation a call of its own.
template <class Call>
[[gnu::always_inline]] inline std::size_t try_call(socket_impl& impl, wait_kind kind, Call&& call,
                                                   boost::system::error_code& ec) {
    std::lock_guard io_lock(impl.io_mutex_);
    if (!impl.socket_.is_valid()) {
        ec = boost::asio::error::bad_descriptor;
        return 0;
    }
    // No call into a socket while its rshutdown runs (socket_impl::
    // shutting_down_): for a caller that will not wait, that would block.
    if (impl.shutting_down_.load(std::memory_order_acquire) > 0) {
        ec = boost::asio::error::would_block;
        return 0;
    }
    // Counted before the call: a note that matches the count later was made
    // by a call after every reactor wait end it counts.
    const std::size_t k = static_cast<std::size_t>(kind);
    const std::uint32_t ends = impl.reactor_wait_ends_[k].load(std::memory_order_acquire);
    const std::size_t n = call(ec);
    // try_again (EAGAIN) is would_block (EWOULDBLOCK) on Linux, so what the
    // seams report needs no translation.
    static_assert(EAGAIN == EWOULDBLOCK);
    // A success skips the comparison: testing an error_code is one flag.
    impl.would_block_notes_[k] = {ec && ec == boost::asio::error::would_block, ends};
    return n;
}

} // namespace corio::detail
