#pragma once

#include <utility>

#include <boost/system/error_code.hpp>

#include <corio/detail/socket_ops.hpp>

namespace corio::detail {

/// Owns one socket and closes it through the ops table that opened it: an
/// rsocket must go to rclose, a kernel socket to close, and the numbers of
/// the two kinds can collide.
class unique_socket final {
public:
    unique_socket() noexcept = default;
    unique_socket(int fd, const socket_ops& ops) noexcept : fd_(fd), ops_(&ops) {}

    unique_socket(const unique_socket&) = delete;
    unique_socket& operator=(const unique_socket&) = delete;

    unique_socket(unique_socket&& other) noexcept
        : fd_(std::exchange(other.fd_, -1)), ops_(std::exchange(other.ops_, nullptr)) {}

    unique_socket& operator=(unique_socket&& other) noexcept {
        if (this != &other) {
            (void)reset();
            fd_ = std::exchange(other.fd_, -1);
            ops_ = std::exchange(other.ops_, nullptr);
        }
        return *this;
    }

    ~unique_socket() { (void)reset(); }

    int get() const noexcept { return fd_; }
    const socket_ops* ops() const noexcept { return ops_; }
    bool is_valid() const noexcept { return fd_ >= 0; }

    /// Gives up ownership without closing.
    [[nodiscard]] int release() noexcept {
        ops_ = nullptr;
        return std::exchange(fd_, -1);
    }

    /// Closes the socket now and reports what close said; the destructor
    /// has nowhere to report it.
    boost::system::error_code reset() noexcept {
        boost::system::error_code ec;
        if (fd_ >= 0)
            ec = ops_->close(fd_);
        fd_ = -1;
        ops_ = nullptr;
        return ec;
    }

private:
    int fd_ = -1;
    const socket_ops* ops_ = nullptr;
};

} // namespace corio::detail
