#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include <sys/types.h>

#include <boost/asio/awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <corio/poll_mode.hpp>
#include <corio/stream.hpp>

namespace coriostream {

// The data paths' calls, as riostream makes them: try the call, and wait
// (async_wait) only when it would block. Each comes in two halves so that a
// call that goes through at once costs no coroutine either: try_all makes
// the calls without waiting and returns true when it finished (all of
// `data` moved, or `ec` set); when it returns false, the call would block
// after `done` bytes and the caller co_awaits rest_of_all from there. Both
// put the stream in non_blocking mode, which changes none of its async
// operations.
//
//     std::size_t done = 0;
//     boost::system::error_code ec;
//     if (!try_all(stream, io_call::write, data, 0, done, ec))
//         ec = co_await rest_of_all(stream, io_call::write, data, 0, done);

/// write_some (rsend), read_some (rrecv; eof when the peer ends first) or
/// iowrite (riowrite's loop into the peer's mapping at `offset`).
enum class io_call { write, read, iowrite };

/// Makes `what` over all of `data` past `done`, as far as it goes without
/// waiting; a call that would block is made again until `attempts` calls
/// in all have found it would block.
bool try_all(corio::stream& stream, io_call what, std::span<std::uint8_t> data, off_t offset,
             std::size_t& done, boost::system::error_code& ec, int attempts = 1);

/// The `attempts` for try_all in `mode`. In busy mode a call that would
/// block is made again, as rstream's and riostream's default loops do
/// (nonblocking rsend/rrecv/riowrite, retried on EAGAIN), before the caller
/// waits through the library, whose wait costs an operation, a turn of the
/// busy task and a coroutine resumption (doc/performance.md, session 12).
/// Bounded, so that other streams on the thread and the watchdog get their
/// turn: 128 calls take longer than the answer of a 64-byte ping-pong in
/// the Soft-RoCE guest usually does (tens of microseconds). The waiting
/// modes never retry: they wait.
int attempts_before_wait(corio::poll_mode mode) noexcept;

/// Makes `what` over the rest of `data`, from `done` on, waiting whenever
/// it would block; the first error, or none.
boost::asio::awaitable<boost::system::error_code>
rest_of_all(corio::stream& stream, io_call what, std::span<std::uint8_t> data, off_t offset,
            std::size_t done);

} // namespace coriostream
