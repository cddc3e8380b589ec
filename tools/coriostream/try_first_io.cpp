#include "try_first_io.hpp"

#include <tuple>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace coriostream {

using boost::system::error_code;

int attempts_before_wait(corio::poll_mode mode, thread_sharing sharing) noexcept {
    if (mode != corio::poll_mode::busy)
        return 1;
    switch (sharing) {
    case thread_sharing::stream_alone:
        return 8192;
    case thread_sharing::other_streams:
        return 128;
    case thread_sharing::peer_on_these_threads:
        break;
    }
    return 1;
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
