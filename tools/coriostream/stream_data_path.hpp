#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/system/error_code.hpp>

#include "data_path.hpp"
#include "test_announcement.hpp"
#include "transfer_context.hpp"
#include "try_first_io.hpp"
#include "writer_pacing.hpp"

namespace coriostream {

/// rstream's protocol (rdma-core's librdmacm/examples/rstream.c): every
/// transfer is copied through the stream with rsend and rrecv, as send and recv are
/// on kernel sockets. Per test, the client sends 16 bytes and the server
/// answers with 16; then each iteration the client sends transfer_count
/// transfers and receives as many back. With -T v every buffer sent is
/// formatted first and every buffer received is verified, the 16-byte
/// handshake included, with common.c's counters; without it, the handshake
/// carries each end's test_announcement, and ends given different tests
/// stop there with one line that says so.
class stream_data_path final : public data_path {
public:
    explicit stream_data_path(const transfer_context& context);

    boost::asio::awaitable<transfer_timing> run_test(const test_case& test) override;

private:
    /// rstream's send_xfer (io_call::write) or recv_xfer (io_call::read)
    /// of `data`, as far as it goes without waiting: nothing when the
    /// transfer finished (end_xfer has run; `timed` ones count towards the
    /// progress line), else rest_of_all's coroutine that finishes it, whose
    /// error the caller hands to end_xfer. Only a transfer that waits costs
    /// a coroutine.
    template <io_call what>
    std::optional<boost::asio::awaitable<boost::system::error_code>>
    try_xfer(std::span<std::uint8_t> data, bool timed);
    /// A finished transfer's error if any, else its progress and
    /// verification.
    template <io_call what>
    void end_xfer(std::span<std::uint8_t> data, bool timed, const boost::system::error_code& ec);
    /// -T v: throws run_error at the first byte that is not the pattern's.
    void verify_received(std::span<const std::uint8_t> data) const;

    transfer_context context_;
    std::string send_call_;
    std::string recv_call_;
    /// try_all's attempts in this poll mode, asked once, not per transfer.
    int attempts_;
    /// Turns for a peer on this stream's threads during a bandwidth row.
    writer_pacing pacing_;
    /// rstream's 16 sync bytes, sent and received, apart from the transfer
    /// buffer so that an announcement never travels in a test's data.
    test_announcement::bytes_type sync_out_{};
    test_announcement::bytes_type sync_in_{};
};

} // namespace coriostream
