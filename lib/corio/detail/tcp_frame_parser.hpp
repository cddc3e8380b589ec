#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include <boost/system/error_code.hpp>

#include <corio/detail/local_mappings.hpp>
#include <corio/detail/tcp_frame.hpp>

namespace corio::detail {

/// The receiving half of the TCP emulation's wire format
/// (doc/tcp-transport.md), with no I/O of its own: it says where the next
/// bytes from the peer belong (header buffer, the application's buffer, or a
/// mapping), and validates each hello and header as it completes. The I/O
/// layer (framed_tcp_socket) reads straight into those places, so stream
/// bytes are never buffered here; tests and the fuzzer use feed(), which
/// copies from a byte span through the same state machine.
///
/// Once a check fails the parser stays failed: every later call reports the
/// same error, and no byte is ever placed outside a PROT_WRITE mapping of
/// `mappings`.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: unsafe.
class tcp_frame_parser {
public:
    /// What the next bytes from the peer are.
    enum class stage {
        hello,           ///< the peer's hello: header_space()
        header,          ///< a frame header: header_space()
        stream_payload,  ///< payload_remaining() bytes for the application
        mapping_payload, ///< payload_remaining() bytes for mapping_destination()
        failed,          ///< a check failed: error()
    };

    /// Why the parser failed, for diagnostics and tests.
    enum class fault {
        none,
        bad_magic,           ///< the first bytes are not a corio hello
        bad_version,         ///< a hello or header of another version
        nonzero_reserved,    ///< reserved bytes are not zero
        unknown_type,        ///< a frame type this version does not know
        empty_frame,         ///< a frame declaring no payload
        oversize_length,     ///< a frame declaring more than max_payload
        data_with_offset,    ///< a data frame with a nonzero offset
        unknown_mapping,     ///< no mapping holds the iowrite's offset
        mapping_not_writable,///< the mapping holding it is PROT_NONE
        crosses_mapping_end, ///< the iowrite runs past its mapping's end
        truncated_header,    ///< the stream ended inside a hello or header
        truncated_payload,   ///< the stream ended inside an iowrite's payload
        mapping_withdrawn,   ///< this side unmapped the region mid-frame
    };

    explicit tcp_frame_parser(const local_mappings& mappings) noexcept : mappings_(&mappings) {}

    stage next() const noexcept { return stage_; }

    /// hello and header stages: where the rest of the header goes.
    std::span<std::byte> header_space() noexcept {
        return std::span(header_).subspan(filled_);
    }

    /// Payload stages: where header bytes read past the payload's end go,
    /// so that one read can take a payload's tail and the next header. Call
    /// payload_received() for the payload part first, then header_received().
    std::span<std::byte> lookahead_space() noexcept { return std::span(header_); }

    /// `n` more bytes were placed at header_space(); validates the hello or
    /// header once complete. Returns the parser's error, if any.
    boost::system::error_code header_received(std::size_t n) noexcept;

    /// Bytes left in the current frame's payload.
    std::size_t payload_remaining() const noexcept { return remaining_; }

    /// mapping_payload stage: where the next payload byte goes.
    std::byte* mapping_destination() const noexcept { return destination_; }

    /// `n` payload bytes (at most payload_remaining()) were placed.
    void payload_received(std::size_t n) noexcept;

    /// The peer closed its side. boost::asio::error::eof at a frame boundary
    /// or inside a data frame (whose bytes so far are ordinary stream bytes);
    /// a protocol error inside a hello, header or iowrite payload.
    boost::system::error_code end_of_stream() noexcept;

    /// This side unmapped [base, base + length): an iowrite frame being
    /// placed there fails the parser, since its memory may be gone.
    void mapping_removed(const void* base, std::size_t length) noexcept;

    boost::system::error_code error() const noexcept { return error_; }
    fault why() const noexcept { return fault_; }

    /// The iomap_size in the peer's hello (0 until it has arrived).
    std::uint32_t peer_iomap_size() const noexcept { return peer_iomap_size_; }

    struct feed_result {
        std::size_t consumed = 0;  ///< bytes of `input` used
        std::size_t delivered = 0; ///< stream bytes written to `stream_out`
        boost::system::error_code ec;
    };

    /// Parses from `input`, placing stream bytes in `stream_out` and iowrite
    /// bytes in their mappings; stops when the input is used up, when
    /// `stream_out` is full and stream bytes come next, or at an error.
    feed_result feed(std::span<const std::byte> input, std::span<std::byte> stream_out) noexcept;

private:
    boost::system::error_code fail(fault f) noexcept;
    boost::system::error_code check_hello() noexcept;
    boost::system::error_code check_header() noexcept;

    const local_mappings* mappings_;
    tcp_frame::header_bytes header_{};
    std::size_t filled_ = 0;
    stage stage_ = stage::hello;
    std::size_t remaining_ = 0;
    std::byte* destination_ = nullptr;
    std::uint32_t peer_iomap_size_ = 0;
    fault fault_ = fault::none;
    boost::system::error_code error_;
};

} // namespace corio::detail
