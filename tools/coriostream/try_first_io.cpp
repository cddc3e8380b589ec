#include "try_first_io.hpp"

#include <tuple>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace coriostream {

namespace {

using boost::system::error_code;

/// Runs `call(done, ec)` (it returns the bytes it moved) until `size` bytes
/// are done or it fails; false, with `ec` clear, when it would block first.
template <class Call>
bool try_until_done(corio::stream& stream, std::size_t size, std::size_t& done, error_code& ec,
                    Call call) {
    if (!stream.non_blocking()) {
        stream.non_blocking(true, ec);
        if (ec)
            return true;
    }
    while (done < size) {
        done += call(done, ec);
        if (ec == boost::asio::error::would_block) {
            ec.clear();
            return false;
        }
        if (ec)
            return true;
    }
    return true;
}

/// try_until_done's slow path: waits for `what` before every try.
template <class Call>
boost::asio::awaitable<error_code> rest_until_done(corio::stream& stream, std::size_t size,
                                                   std::size_t done,
                                                   corio::stream::wait_type what, Call call) {
    error_code ec;
    do {
        std::tie(ec) =
            co_await stream.async_wait(what, boost::asio::as_tuple(boost::asio::use_awaitable));
        if (ec)
            co_return ec;
    } while (!try_until_done(stream, size, done, ec, call));
    co_return ec;
}

auto write_call(corio::stream& stream, boost::asio::const_buffer data) {
    return [&stream, data](std::size_t done, error_code& ec) {
        return stream.write_some(data + done, ec);
    };
}

auto read_call(corio::stream& stream, boost::asio::mutable_buffer data) {
    return [&stream, data](std::size_t done, error_code& ec) {
        return stream.read_some(data + done, ec);
    };
}

auto iowrite_call(corio::stream& stream, boost::asio::const_buffer data, off_t offset) {
    return [&stream, data, offset](std::size_t done, error_code& ec) {
        return stream.iowrite(data + done, offset + static_cast<off_t>(done), ec);
    };
}

} // namespace

bool try_write_all(corio::stream& stream, boost::asio::const_buffer data, std::size_t& done,
                   error_code& ec) {
    return try_until_done(stream, data.size(), done, ec, write_call(stream, data));
}

boost::asio::awaitable<error_code> write_rest(corio::stream& stream,
                                              boost::asio::const_buffer data, std::size_t done) {
    return rest_until_done(stream, data.size(), done, corio::stream::wait_write,
                           write_call(stream, data));
}

bool try_read_all(corio::stream& stream, boost::asio::mutable_buffer data, std::size_t& done,
                  error_code& ec) {
    return try_until_done(stream, data.size(), done, ec, read_call(stream, data));
}

boost::asio::awaitable<error_code> read_rest(corio::stream& stream,
                                             boost::asio::mutable_buffer data, std::size_t done) {
    return rest_until_done(stream, data.size(), done, corio::stream::wait_read,
                           read_call(stream, data));
}

bool try_iowrite_all(corio::stream& stream, boost::asio::const_buffer data, off_t offset,
                     std::size_t& done, error_code& ec) {
    return try_until_done(stream, data.size(), done, ec, iowrite_call(stream, data, offset));
}

boost::asio::awaitable<error_code> iowrite_rest(corio::stream& stream,
                                                boost::asio::const_buffer data, off_t offset,
                                                std::size_t done) {
    return rest_until_done(stream, data.size(), done, corio::stream::wait_write,
                           iowrite_call(stream, data, offset));
}

} // namespace coriostream
