#pragma once

#include <memory>

namespace corio::detail {

class socket_impl;

/// Lets corio's operations reach the state behind an I/O object without
/// making it part of the object's public interface.
struct stream_access {
    template <class Stream>
    static socket_impl& impl(Stream& stream) noexcept {
        return *stream.live();
    }

    template <class Stream>
    static std::shared_ptr<socket_impl> shared_impl(Stream& stream) {
        return stream.impl_shared();
    }
};

} // namespace corio::detail
