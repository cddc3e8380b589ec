#include "try_first_io.hpp"

#include <tuple>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace coriostream {

namespace {

using boost::system::error_code;

/// One call of `what` on the bytes of `data` past `done`; the bytes moved.
std::size_t call_once(corio::stream& stream, io_call what, std::span<std::uint8_t> data,
                      off_t offset, std::size_t done, error_code& ec) {
    const auto rest = boost::asio::buffer(data.data(), data.size()) + done;
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

} // namespace

bool try_all(corio::stream& stream, io_call what, std::span<std::uint8_t> data, off_t offset,
             std::size_t& done, error_code& ec, int attempts) {
    if (!stream.non_blocking()) {
        stream.non_blocking(true, ec);
        if (ec)
            return true;
    }
    while (done < data.size()) {
        done += call_once(stream, what, data, offset, done, ec);
        if (ec == boost::asio::error::would_block) {
            ec.clear();
            if (--attempts <= 0)
                return false;
            continue;
        }
        if (ec)
            return true;
    }
    return true;
}

int attempts_before_wait(corio::poll_mode mode) noexcept {
    return mode == corio::poll_mode::busy ? 128 : 1;
}

boost::asio::awaitable<error_code> rest_of_all(corio::stream& stream, io_call what,
                                               std::span<std::uint8_t> data, off_t offset,
                                               std::size_t done) {
    const auto wait = what == io_call::read ? corio::stream::wait_read : corio::stream::wait_write;
    error_code ec;
    do {
        std::tie(ec) =
            co_await stream.async_wait(wait, boost::asio::as_tuple(boost::asio::use_awaitable));
        if (ec)
            co_return ec;
    } while (!try_all(stream, what, data, offset, done, ec));
    co_return ec;
}

} // namespace coriostream
