#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "options.hpp"
#include "test_plan.hpp"

namespace coriostream {

/// What one end tells the other in the 16 bytes of riostream's and
/// rstream's sync_test, which both send before every test and whose content
/// neither reads. Their protocol does not carry the test, so two ends given
/// different -S, -C, -I or data paths used to find out only by waiting
/// until --timeout, or, over rdma-core v44, by spinning inside a riowrite
/// that crossed the end of the peer's mapping (doc/riostream-compatibility.md).
/// A coriostream sends its test there and compares the peer's with its own;
/// bytes that are not an announcement (riostream, rstream, or the pattern of
/// -T v on the stream path) are not compared, and neither is an
/// announcement of this end's own role. riostream and rstream send the first
/// bytes of their buffer, which hold what this end sent or wrote last: its
/// own announcement of an earlier test comes back that way (a riostream
/// client's buffer receives the server's sync bytes, riowrites them into
/// the server's mapping and gets them back in the server's writes).
///
/// Layout: "crio", the transfer size (3 bytes), the data path (1 byte, its
/// top bit set when the server sends it), the transfer count and the
/// iterations (4 bytes each), little-endian.
struct test_announcement {
    static constexpr std::size_t size = 16;
    using bytes_type = std::array<std::uint8_t, size>;

    /// The data path and, for iomap, how the receiver learns of the data.
    enum class path : std::uint8_t { stream = 1, iomap_marker = 2, iomap_message = 3 };

    /// Which end sends it: riostream's dst_addr.
    enum class role : std::uint8_t { client, server };

    std::size_t transfer_size;
    std::size_t transfer_count;
    std::size_t iterations;
    path data_path;
    role sender;

    /// `test` on `kind` with `notify` (which only the iomap path uses), as
    /// the end of role `sender` announces it. Expects what validate() lets
    /// through: a transfer size below 2^24 and counts below 2^32.
    static test_announcement of(const test_case& test, data_path_kind kind, notify_method notify,
                                role sender);

    /// The bytes, with "crio" first.
    bytes_type encode() const;

    /// The peer's announcement, or nothing when `bytes` are not one.
    static std::optional<test_announcement> decode(std::span<const std::uint8_t, size> bytes);

    friend bool operator==(const test_announcement&, const test_announcement&) = default;
};

/// The error line for a peer that announced `theirs` while this end runs
/// `ours`, naming what differs and the options that set it; nothing when
/// `theirs` is not an announcement, is one of this end's role (its own,
/// relayed), or is the same test.
std::optional<std::string>
announcement_mismatch(std::span<const std::uint8_t, test_announcement::size> theirs,
                      const test_announcement& ours);

} // namespace coriostream
