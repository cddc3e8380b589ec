#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include <sys/types.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/system/error_code.hpp>

#include <corio/poll_mode.hpp>
#include <corio/stream.hpp>

#include "thread_sharing.hpp"

namespace coriostream {

// The data paths' calls, as riostream makes them: try the call, and wait
// (async_wait) only when it would block. Each comes in two halves so that a
// call that goes through at once costs no coroutine either: try_all makes
// the calls without waiting and returns true when it finished (all of
// `data` moved, or `ec` set); when it returns false, the call would block
// after `done` bytes and the caller co_awaits rest_of_all from there. Both
// need the stream in non_blocking mode, which changes none of its async
// operations; session::run puts it there once for the whole run. On a
// stream still blocking, each call would wait: checking the mode before
// every call cost 7 instructions a call (host callgrind, 64-byte transfers,
// doc/performance.md, session 48). A closed stream ends them with
// bad_descriptor in either mode.
//
//     stream.non_blocking(true);
//     std::size_t done = 0;
//     boost::system::error_code ec;
//     if (!try_all(stream, io_call::write, data, 0, done, ec))
//         ec = co_await rest_of_all(stream, io_call::write, data, 0, done);

/// write_some (rsend), read_some (rrecv; eof when the peer ends first) or
/// iowrite (riowrite's loop into the peer's mapping at `offset`).
enum class io_call { write, read, iowrite };

namespace detail {

/// One call of `what` on the bytes of `data` past `done`; the bytes moved.
/// Always inlined, as try_all is: once its callers were inlined, GCC kept
/// this one out of line instead (doc/performance.md, session 19).
[[gnu::always_inline]] inline std::size_t call_once(corio::stream& stream, io_call what,
                                                    std::span<std::uint8_t> data, off_t offset,
                                                    std::size_t done,
                                                    boost::system::error_code& ec) {
    // Made directly, not as buffer(data) + done, whose clamp to the size
    // the loop's condition already makes.
    const boost::asio::mutable_buffer rest(data.data() + done, data.size() - done);
    switch (what) {
    case io_call::write:
        return stream.write_some(boost::asio::const_buffer(rest), ec);
    case io_call::read:
        return stream.read_some(rest, ec);
    case io_call::iowrite:
        return stream.iowrite(rest, offset + static_cast<off_t>(done), ec);
    }
    return 0;
}

} // namespace detail

/// Makes `what` over all of `data` past `done`, as far as it goes without
/// waiting; a call that would block is made again until `attempts` calls
/// in all have found it would block.
///
/// Always inlined: it is the data paths' per-transfer loop, and as a call
/// of its own (GCC does not inline it unasked) its frame and arguments cost
/// about 40 instructions per 64-byte transfer, a twelfth of what rstream
/// spends on one (doc/performance.md, session 18).
[[gnu::always_inline]] inline bool try_all(corio::stream& stream, io_call what,
                                           std::span<std::uint8_t> data, off_t offset,
                                           std::size_t& done, boost::system::error_code& ec,
                                           int attempts = 1) {
    while (done < data.size()) {
        done += detail::call_once(stream, what, data, offset, done, ec);
        // Success first: testing an error_code is one flag, comparing it
        // with would_block a dozen instructions.
        if (!ec)
            continue;
        if (ec != boost::asio::error::would_block)
            return true;
        ec.clear();
        if (--attempts <= 0)
            return false;
    }
    return true;
}

/// The `attempts` for try_all in `mode`, with `sharing` on the stream's
/// threads. In busy mode a call that would block is made again, as rstream's
/// and riostream's default loops do (nonblocking rsend/rrecv/riowrite,
/// retried on EAGAIN), before the caller waits through the library, whose
/// wait costs an operation, a turn of the busy task and a coroutine
/// resumption (doc/performance.md, session 12). Bounded, so that other
/// streams on the thread and the watchdog get their turn:
/// - beside other streams, 128 calls, which take longer than the answer of
///   a 64-byte ping-pong in the Soft-RoCE guest usually does (tens of
///   microseconds);
/// - a stream alone on its io_context makes 8,192: nothing else on its
///   threads needs a turn within milliseconds, and a wait in the middle of a
///   transfer answers late, which between two coriostreams lengthened the
///   other end's wait in turn (doc/performance.md, session 24);
/// - with the peers' halves on the same threads, fewer than the halves,
///   one: the answer may need the thread the call holds, and 128 calls made
///   --loopback's 64_lat row 12 times slower over tcp on one thread and 5–7
///   times slower with two threads and four streams (doc/performance.md,
///   session 39).
/// The waiting modes never retry: they wait.
int attempts_before_wait(corio::poll_mode mode, thread_sharing sharing) noexcept;

/// Makes `what` over the rest of `data`, from `done` on, waiting whenever
/// it would block; the first error, or none.
boost::asio::awaitable<boost::system::error_code>
rest_of_all(corio::stream& stream, io_call what, std::span<std::uint8_t> data, off_t offset,
            std::size_t done);

} // namespace coriostream
