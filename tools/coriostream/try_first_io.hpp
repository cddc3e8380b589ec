#pragma once

#include <sys/types.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/system/error_code.hpp>

#include <corio/stream.hpp>

namespace coriostream {

// The data paths' calls, as riostream makes them: try the call, and wait
// (async_wait) only when it would block. A call that can go on at once
// costs no operation object, no post and no resumption. Each puts the
// stream in non_blocking mode, which changes none of its async operations.

/// Writes all of `data`; the first error, or none.
boost::asio::awaitable<boost::system::error_code> write_all(corio::stream& stream,
                                                            boost::asio::const_buffer data);

/// Reads exactly `data.size()` bytes; eof when the peer ends first.
boost::asio::awaitable<boost::system::error_code> read_all(corio::stream& stream,
                                                           boost::asio::mutable_buffer data);

/// riowrite's loop: all of `data` into the peer's mapping at `offset`.
boost::asio::awaitable<boost::system::error_code> iowrite_all(corio::stream& stream,
                                                              boost::asio::const_buffer data,
                                                              off_t offset);

} // namespace coriostream
