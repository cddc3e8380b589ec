#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

// The wire format, version 1, of corio's TCP emulation of riomap/riowrite,
// described in doc/tcp-transport.md. Every multi-byte field is big-endian.
namespace corio::detail::tcp_frame {

/// Hellos and frame headers are both this long, so a receiver always knows
/// how many bytes to read next without looking at them first.
inline constexpr std::size_t header_size = 16;

/// The protocol version this build speaks, in every hello and frame header.
inline constexpr std::uint8_t version = 1;

/// The largest payload one frame may carry. Senders split larger writes;
/// receivers refuse a header declaring more as a protocol error.
inline constexpr std::uint32_t max_payload = 1u << 20;

/// First bytes of a hello. The high first byte and the CR LF catch a peer or
/// middlebox that is not byte-transparent, as in PNG's signature.
inline constexpr std::array<std::uint8_t, 8> magic = {0x89, 'c', 'o', 'r', 'i', 'o', '\r', '\n'};

enum class frame_type : std::uint8_t {
    /// Ordinary stream bytes, delivered to the receiving application.
    data = 1,
    /// Bytes for the receiver's PROT_WRITE mapping at the header's offset.
    iowrite = 2,
};

using header_bytes = std::array<std::byte, header_size>;

/// Bytes 8..15 of a hello: version, three zero bytes, then this side's
/// iomap_size (informational).
inline header_bytes encode_hello(std::uint32_t iomap_size) noexcept {
    header_bytes h{};
    for (std::size_t i = 0; i < magic.size(); ++i)
        h[i] = std::byte{magic[i]};
    h[8] = std::byte{version};
    for (std::size_t i = 0; i < 4; ++i)
        h[12 + i] = std::byte(iomap_size >> (24 - 8 * i));
    return h;
}

/// version, type, two zero bytes, length (u32), offset (u64; zero for data).
inline header_bytes encode_header(frame_type type, std::uint32_t length,
                                  std::uint64_t offset) noexcept {
    header_bytes h{};
    h[0] = std::byte{version};
    h[1] = std::byte{static_cast<std::uint8_t>(type)};
    for (std::size_t i = 0; i < 4; ++i)
        h[4 + i] = std::byte(length >> (24 - 8 * i));
    for (std::size_t i = 0; i < 8; ++i)
        h[8 + i] = std::byte(offset >> (56 - 8 * i));
    return h;
}

inline std::uint64_t read_be(const std::byte* p, std::size_t n) noexcept {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i)
        v = (v << 8) | std::to_integer<std::uint64_t>(p[i]);
    return v;
}

} // namespace corio::detail::tcp_frame
