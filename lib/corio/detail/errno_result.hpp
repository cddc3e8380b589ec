#pragma once

#include <cerrno>
#include <cstddef>

#include <sys/types.h>
#include <sys/uio.h>

#include <boost/asio/error.hpp>
#include <boost/system/error_code.hpp>

// Turning a C call's -1/errno into an error_code is the same for every
// transport; these keep the ops tables to one line per call.
namespace corio::detail {

inline boost::system::error_code last_error() noexcept {
    return {errno, boost::system::system_category()};
}

/// For calls that return 0 or -1.
inline boost::system::error_code status_of(int result) noexcept {
    return result == -1 ? last_error() : boost::system::error_code{};
}

/// For calls that return a count or -1.
inline std::size_t count_of(ssize_t result, boost::system::error_code& ec) noexcept {
    if (result < 0) {
        ec = last_error();
        return 0;
    }
    ec.clear();
    return static_cast<std::size_t>(result);
}

/// For receive calls: 0 bytes when some were asked for is the peer's orderly
/// shutdown, which Asio reports as error::eof.
inline std::size_t received_count(ssize_t result, bool wanted_bytes,
                                  boost::system::error_code& ec) noexcept {
    const std::size_t n = count_of(result, ec);
    if (n == 0 && wanted_bytes && !ec)
        ec = boost::asio::error::eof;
    return n;
}

inline bool wants_bytes(const iovec* iov, int iovcnt) noexcept {
    for (int i = 0; i < iovcnt; ++i)
        if (iov[i].iov_len > 0)
            return true;
    return false;
}

} // namespace corio::detail
