#include "try_first_io.hpp"

#include <cstddef>
#include <tuple>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace coriostream {

namespace {

using boost::system::error_code;

/// Runs `call(done, ec)` (it returns the bytes it moved) until `size` bytes
/// are done, waiting for `what` whenever it would block.
template <class Call>
boost::asio::awaitable<error_code> until_done(corio::stream& stream, std::size_t size,
                                              corio::stream::wait_type what, Call call) {
    error_code ec;
    if (!stream.non_blocking()) {
        stream.non_blocking(true, ec);
        if (ec)
            co_return ec;
    }
    std::size_t done = 0;
    while (done < size) {
        done += call(done, ec);
        if (ec == boost::asio::error::would_block) {
            std::tie(ec) = co_await stream.async_wait(
                what, boost::asio::as_tuple(boost::asio::use_awaitable));
        }
        if (ec)
            co_return ec;
    }
    co_return ec;
}

} // namespace

boost::asio::awaitable<error_code> write_all(corio::stream& stream,
                                             boost::asio::const_buffer data) {
    return until_done(stream, data.size(), corio::stream::wait_write,
                      [&stream, data](std::size_t done, error_code& ec) {
                          return stream.write_some(data + done, ec);
                      });
}

boost::asio::awaitable<error_code> read_all(corio::stream& stream,
                                            boost::asio::mutable_buffer data) {
    return until_done(stream, data.size(), corio::stream::wait_read,
                      [&stream, data](std::size_t done, error_code& ec) {
                          return stream.read_some(data + done, ec);
                      });
}

boost::asio::awaitable<error_code> iowrite_all(corio::stream& stream,
                                               boost::asio::const_buffer data, off_t offset) {
    return until_done(stream, data.size(), corio::stream::wait_write,
                      [&stream, data, offset](std::size_t done, error_code& ec) {
                          return stream.iowrite(data + done, offset + static_cast<off_t>(done),
                                                ec);
                      });
}

} // namespace coriostream
