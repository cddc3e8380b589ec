#pragma once

namespace corio::detail {

class socket_impl;

/// Lets corio's operations reach the state behind an I/O object without
/// making it part of the object's public interface.
struct stream_access {
    template <class Stream>
    static socket_impl& impl(Stream& stream) noexcept {
        return *stream.live();
    }
};

} // namespace corio::detail
