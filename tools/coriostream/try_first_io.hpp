#pragma once

#include <cstddef>

#include <sys/types.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/system/error_code.hpp>

#include <corio/stream.hpp>

namespace coriostream {

// The data paths' calls, as riostream makes them: try the call, and wait
// (async_wait) only when it would block. Each comes in two halves so that a
// call that goes through at once costs no coroutine either: try_* makes the
// calls without waiting and returns true when it finished (all of `data`
// moved, or `ec` set); when it returns false, the call would block after
// `done` bytes and the caller co_awaits the *_rest coroutine from there.
// Each puts the stream in non_blocking mode, which changes none of its async
// operations.
//
//     std::size_t done = 0;
//     boost::system::error_code ec;
//     if (!try_write_all(stream, data, done, ec))
//         ec = co_await write_rest(stream, data, done);

/// Writes what it can of all of `data` past `done`.
bool try_write_all(corio::stream& stream, boost::asio::const_buffer data, std::size_t& done,
                   boost::system::error_code& ec);
/// Writes the rest of `data`, from `done` on; the first error, or none.
boost::asio::awaitable<boost::system::error_code>
write_rest(corio::stream& stream, boost::asio::const_buffer data, std::size_t done);

/// Reads what it can of exactly `data.size()` bytes past `done`; eof when
/// the peer ends first.
bool try_read_all(corio::stream& stream, boost::asio::mutable_buffer data, std::size_t& done,
                  boost::system::error_code& ec);
/// Reads the rest of `data`, from `done` on; eof when the peer ends first.
boost::asio::awaitable<boost::system::error_code>
read_rest(corio::stream& stream, boost::asio::mutable_buffer data, std::size_t done);

/// riowrite's loop: what it can of all of `data` into the peer's mapping at
/// `offset`, past `done`.
bool try_iowrite_all(corio::stream& stream, boost::asio::const_buffer data, off_t offset,
                     std::size_t& done, boost::system::error_code& ec);
/// The rest of riowrite's loop, from `done` on.
boost::asio::awaitable<boost::system::error_code>
iowrite_rest(corio::stream& stream, boost::asio::const_buffer data, off_t offset,
             std::size_t done);

} // namespace coriostream
