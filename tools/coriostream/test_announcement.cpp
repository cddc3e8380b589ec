#include "test_announcement.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace coriostream {

namespace {

constexpr std::array<std::uint8_t, 4> magic{'c', 'r', 'i', 'o'};
// The data path byte's top bit: the server sent it.
constexpr std::uint8_t server_bit = 0x80;

void put_le(std::uint8_t* out, std::size_t value, std::size_t bytes) {
    for (std::size_t i = 0; i < bytes; ++i)
        out[i] = static_cast<std::uint8_t>(value >> (8 * i));
}

std::size_t get_le(const std::uint8_t* in, std::size_t bytes) {
    std::size_t value = 0;
    for (std::size_t i = 0; i < bytes; ++i)
        value |= static_cast<std::size_t>(in[i]) << (8 * i);
    return value;
}

std::string path_option(test_announcement::path path) {
    switch (path) {
    case test_announcement::path::stream:
        return "--data-path stream";
    case test_announcement::path::iomap_marker:
        return "--data-path iomap --notify marker";
    case test_announcement::path::iomap_message:
        return "--data-path iomap --notify message";
    }
    // A later coriostream's path: still a difference, named by its number.
    return "data path " + std::to_string(static_cast<unsigned>(path));
}

std::string test_options(const test_announcement& a) {
    return "-S " + std::to_string(a.transfer_size) + " -C " + std::to_string(a.transfer_count) +
           " -I " + std::to_string(a.iterations);
}

} // namespace

test_announcement test_announcement::of(const test_case& test, data_path_kind kind,
                                        notify_method notify, role sender) {
    path p = path::stream;
    if (kind == data_path_kind::iomap)
        p = notify == notify_method::message ? path::iomap_message : path::iomap_marker;
    return {test.transfer_size, test.transfer_count, test.iterations, p, sender};
}

test_announcement::bytes_type test_announcement::encode() const {
    bytes_type out{};
    std::copy(magic.begin(), magic.end(), out.begin());
    put_le(&out[4], transfer_size, 3);
    out[7] = static_cast<std::uint8_t>(static_cast<std::uint8_t>(data_path) |
                                       (sender == role::server ? server_bit : 0));
    put_le(&out[8], transfer_count, 4);
    put_le(&out[12], iterations, 4);
    return out;
}

std::optional<test_announcement>
test_announcement::decode(std::span<const std::uint8_t, size> bytes) {
    if (!std::equal(magic.begin(), magic.end(), bytes.begin()))
        return std::nullopt;
    return test_announcement{get_le(&bytes[4], 3), get_le(&bytes[8], 4), get_le(&bytes[12], 4),
                             static_cast<path>(bytes[7] & ~server_bit),
                             (bytes[7] & server_bit) != 0 ? role::server : role::client};
}

std::optional<std::string>
announcement_mismatch(std::span<const std::uint8_t, test_announcement::size> theirs,
                      const test_announcement& ours) {
    const auto peer = test_announcement::decode(theirs);
    if (!peer || peer->sender == ours.sender)
        return std::nullopt;
    // riostream's protocol has no room for either: each end must be given
    // the same options, which is what the line asks for.
    std::vector<std::string> differences;
    if (peer->data_path != ours.data_path)
        differences.push_back("a different data path (" + path_option(peer->data_path) +
                              " there, " + path_option(ours.data_path) +
                              " here): give both ends the same --data-path and --notify");
    if (peer->transfer_size != ours.transfer_size || peer->transfer_count != ours.transfer_count ||
        peer->iterations != ours.iterations)
        differences.push_back("a different test (" + test_options(*peer) + " there, " +
                              test_options(ours) +
                              " here): give both ends the same -S, -C and -I, or none");
    if (differences.empty())
        return std::nullopt;
    std::string line = "the peer runs ";
    for (std::size_t i = 0; i < differences.size(); ++i)
        line += (i == 0 ? "" : "; and ") + differences[i];
    return line;
}

} // namespace coriostream
