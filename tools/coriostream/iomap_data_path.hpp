#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/system/error_code.hpp>

#include "data_path.hpp"
#include "peer_watchdog.hpp"
#include "test_announcement.hpp"
#include "transfer_context.hpp"
#include "try_first_io.hpp"
#include "writer_pacing.hpp"

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
/// The marker is polled without blocking the io_context: run_test looks at
/// the byte, and yields to the executor between bursts of looks. A long wait
/// also peeks at the stream now and then, so that a peer that has gone ends
/// it at once, not after --timeout.
///
/// Every call is made first without a coroutine of its own (try_call), and
/// only a call that would block, or a marker that has not arrived after the
/// first burst of looks, costs one: at 64 bytes the coroutines cost more
/// instructions than the calls themselves.
class iomap_data_path final : public data_path {
public:
    explicit iomap_data_path(const transfer_context& context);

    boost::asio::awaitable<transfer_timing> run_test(const test_case& test) override;

private:
    /// Makes `what` over all of `data` as far as it goes without waiting:
    /// nothing when it finished, else the coroutine that finishes it. The
    /// handshake and the notices (--notify message) are written and read;
    /// iowrite goes into the peer's mapping at offset 0.
    std::optional<boost::asio::awaitable<void>> try_call(io_call what,
                                                         std::span<std::uint8_t> data);
    boost::asio::awaitable<void> call_rest(io_call what, std::span<std::uint8_t> data,
                                           std::size_t done);
    /// A finished call's error if any, else its progress.
    void end_call(io_call what, const boost::system::error_code& ec);
    /// Before the last riowrite of an iteration: the marker, and with -T v
    /// common.c's pattern in all bytes but the marker.
    void mark_last_write(std::span<std::uint8_t> region, std::uint8_t marker);
    /// Looks at the marker byte for one burst: true when `marker` is there.
    bool marker_arrived(std::uint8_t& marker_byte, std::uint8_t marker) const;
    /// Waits for the marker after a first burst of looks missed it, yielding
    /// between bursts.
    boost::asio::awaitable<void> wait_for_marker(std::uint8_t& marker_byte, std::uint8_t marker);
    /// The stream's end (eof) or error when the peer has gone and its
    /// marker may never come; nothing while the connection stands.
    boost::system::error_code peer_gone();
    /// Once the peer's last write of an iteration has left `marker` (or
    /// sent it through the stream, with --notify message): progress, then
    /// verification.
    void end_recv(std::span<std::uint8_t> region, std::size_t transfer_count);

    transfer_context context_;
    std::string send_call_;
    std::string recv_call_;
    /// try_all's attempts in this poll mode, asked once, not per call.
    int attempts_;
    /// Looks at the marker byte per burst: more for a stream alone on its
    /// io_context.
    int looks_per_yield_;
    /// Bursts of looks between two peer_gone calls in one wait.
    int yields_per_peer_check_;
    /// Turns for a peer on this stream's threads during a bandwidth row.
    writer_pacing pacing_;
    /// riostream's sync_test sends and receives 16 bytes of its transfer
    /// buffer, whose content riostream never looks at; buffers of their own
    /// keep them away from the mapped bytes (and the buffer of a -S 1 test),
    /// and the announcements out of any test's data.
    test_announcement::bytes_type sync_out_{};
    test_announcement::bytes_type sync_in_{};
};

} // namespace coriostream
