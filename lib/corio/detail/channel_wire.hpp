#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include <boost/system/error_code.hpp>

#include <corio/error.hpp>

// The records of corio's zero-copy channel, version 1 (doc/zero-copy-channel.md).
// Every multi-byte field is big-endian.
namespace corio::detail::channel_wire {

inline constexpr std::uint16_t version = 1;

/// First bytes of a hello: a high first byte, as in PNG's signature, and a
/// name no other protocol starts with.
inline constexpr std::array<std::uint8_t, 8> magic = {0x89, 'c', 'o', 'r', 'i', 'o', 'z', 'c'};

inline constexpr std::size_t hello_size = 32;
inline constexpr std::size_t notify_size = 24;
inline constexpr std::size_t credit_size = 8;

enum class role : std::uint8_t { sender = 1, receiver = 2 };
enum class record_type : std::uint8_t { notify = 1, credit = 2 };

/// The largest region a receiver may offer (slot_count * slot_size).
inline constexpr std::uint64_t max_region = std::uint64_t{1} << 32;

using hello_bytes = std::array<std::byte, hello_size>;
using notify_bytes = std::array<std::byte, notify_size>;
using credit_bytes = std::array<std::byte, credit_size>;

inline void put(std::byte* p, std::uint64_t v, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i)
        p[i] = std::byte(v >> (8 * (n - 1 - i)));
}

inline std::uint64_t get(const std::byte* p, std::size_t n) noexcept {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i)
        v = (v << 8) | std::to_integer<std::uint64_t>(p[i]);
    return v;
}

/// What a hello says.
struct hello {
    role sender_or_receiver = role::sender;
    std::uint32_t slot_count = 0;  ///< receiver's hello only
    std::uint32_t slot_size = 0;   ///< receiver's hello only
    std::uint64_t region_offset = 0; ///< receiver's hello only: its mapping's offset
};

/// magic, version (u16), role (u8), 0, slot_count (u32), slot_size (u32),
/// 4 zero bytes, region offset (u64).
inline hello_bytes encode(const hello& h) noexcept {
    hello_bytes b{};
    for (std::size_t i = 0; i < magic.size(); ++i)
        b[i] = std::byte{magic[i]};
    put(&b[8], version, 2);
    b[10] = std::byte{static_cast<std::uint8_t>(h.sender_or_receiver)};
    put(&b[12], h.slot_count, 4);
    put(&b[16], h.slot_size, 4);
    put(&b[24], h.region_offset, 8);
    return b;
}

/// Checks a peer's hello: that of a corio channel (protocol_error if not),
/// of this version (protocol_version_mismatch), of the other role, and for a
/// receiver's, a region that is not empty and not too large.
inline boost::system::error_code decode(const hello_bytes& b, role expected, hello& out) noexcept {
    for (std::size_t i = 0; i < magic.size(); ++i)
        if (b[i] != std::byte{magic[i]})
            return error::protocol_error;
    if (get(&b[8], 2) != version)
        return error::protocol_version_mismatch;
    if (b[10] != std::byte{static_cast<std::uint8_t>(expected)} || b[11] != std::byte{0} ||
        get(&b[20], 4) != 0)
        return error::protocol_error;
    out.sender_or_receiver = expected;
    out.slot_count = static_cast<std::uint32_t>(get(&b[12], 4));
    out.slot_size = static_cast<std::uint32_t>(get(&b[16], 4));
    out.region_offset = get(&b[24], 8);
    if (expected == role::receiver) {
        const std::uint64_t region = std::uint64_t{out.slot_count} * out.slot_size;
        if (region == 0 || region > max_region || out.region_offset > (~std::uint64_t{0} >> 1) - region)
            return error::protocol_error;
    } else if (out.slot_count != 0 || out.slot_size != 0 || out.region_offset != 0) {
        return error::protocol_error;
    }
    return {};
}

/// type 1, three zero bytes, slot (u32), length (u32), 4 zero bytes,
/// sequence (u64).
inline notify_bytes encode_notify(std::uint32_t slot, std::uint32_t length,
                                  std::uint64_t sequence) noexcept {
    notify_bytes b{};
    b[0] = std::byte{static_cast<std::uint8_t>(record_type::notify)};
    put(&b[4], slot, 4);
    put(&b[8], length, 4);
    put(&b[16], sequence, 8);
    return b;
}

/// What a notify says.
struct notify {
    std::uint32_t slot = 0;
    std::uint32_t length = 0;
    std::uint64_t sequence = 0;
};

/// Reads a notify record: protocol_error unless its type is notify and its
/// padding is zero.
inline boost::system::error_code decode_notify(const notify_bytes& b, notify& out) noexcept {
    if (b[0] != std::byte{static_cast<std::uint8_t>(record_type::notify)} || get(&b[1], 3) != 0 ||
        get(&b[12], 4) != 0)
        return error::protocol_error;
    out.slot = static_cast<std::uint32_t>(get(&b[4], 4));
    out.length = static_cast<std::uint32_t>(get(&b[8], 4));
    out.sequence = get(&b[16], 8);
    return {};
}

/// The receiver's checks of a decoded notify, every field: a bad slot or
/// length would point the application outside the region or at a slot it
/// still holds. `with_sender(slot)`, asked only for slot < slot_count, says
/// whether the sender holds that slot (it was never handed out, or its
/// credit went back).
template <class WithSender>
bool admissible(const notify& n, std::uint32_t slot_count, std::uint32_t slot_size,
                std::uint64_t expected_sequence, WithSender&& with_sender) {
    return n.slot < slot_count && n.length <= slot_size && n.sequence == expected_sequence &&
           with_sender(n.slot);
}

/// type 2, three zero bytes, slot (u32).
inline credit_bytes encode_credit(std::uint32_t slot) noexcept {
    credit_bytes b{};
    b[0] = std::byte{static_cast<std::uint8_t>(record_type::credit)};
    put(&b[4], slot, 4);
    return b;
}

} // namespace corio::detail::channel_wire
