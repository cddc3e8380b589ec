#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "data_path.hpp"
#include "transfer_context.hpp"

namespace coriostream {

/// riostream's protocol (rdma-core's librdmacm/examples/riostream.c). Per
/// test, each side maps the first transfer_size bytes of its buffer at
/// offset 0 (riomap; RDMA_IOMAPSIZE is 1), sets the buffer's last byte, the
/// marker byte, to 0xff, and the two exchange 16 bytes through the stream,
/// which also publishes the mappings. Then each iteration the client
/// riowrites its buffer transfer_count times into the server's mapping at
/// offset 0, the last time with the marker byte set to the next even number
/// (0, 2, 4, ... modulo 256), and waits until the server's answer leaves the
/// next odd number in its own marker byte; the server does the mirror image.
/// With -T v the last write of each iteration carries common.c's pattern in
/// all bytes but the marker, and the receiver verifies them once the marker
/// arrived.
///
/// The marker is polled without blocking the io_context: the coroutine looks
/// at the byte, and yields to the executor between looks (after a burst of
/// looks in poll_mode::busy).
class iomap_data_path final : public data_path {
public:
    explicit iomap_data_path(const transfer_context& context);

    boost::asio::awaitable<transfer_timing> run_test(const test_case& test) override;

private:
    /// One riowrite of `region` into the peer's mapping at offset 0.
    boost::asio::awaitable<void> write_region(std::span<const std::uint8_t> region);
    /// transfer_count riowrites of `region`, the last one carrying `marker`.
    boost::asio::awaitable<void> send_xfers(std::span<std::uint8_t> region,
                                            std::size_t transfer_count, std::uint8_t marker);
    /// Waits until the peer's last write of an iteration has left `marker`
    /// in the region's last byte (or sent it through the stream, with
    /// --notify message), then verifies.
    boost::asio::awaitable<void> recv_xfers(std::span<std::uint8_t> region,
                                            std::size_t transfer_count, std::uint8_t marker);
    boost::asio::awaitable<void> wait_for_marker(std::uint8_t& marker_byte, std::uint8_t marker);
    boost::asio::awaitable<void> receive_notice(std::uint8_t marker);
    boost::asio::awaitable<void> sync_test();
    boost::asio::awaitable<void> send_message(std::span<const std::uint8_t> message);
    boost::asio::awaitable<void> recv_message(std::span<std::uint8_t> message);

    transfer_context context_;
    std::string send_call_;
    std::string recv_call_;
    /// riostream's sync_test sends and receives 16 bytes of its transfer
    /// buffer, whose content no one looks at; a buffer of their own keeps
    /// them away from the mapped bytes (and the buffer of a -S 1 test).
    std::array<std::uint8_t, 16> sync_buffer_{};
};

} // namespace coriostream
