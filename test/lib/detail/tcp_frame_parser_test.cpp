#define BOOST_TEST_MODULE tcp_frame_parser
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include <sys/mman.h>

#include <boost/asio/error.hpp>

#include <corio/detail/local_mappings.hpp>
#include <corio/detail/tcp_frame.hpp>
#include <corio/detail/tcp_frame_parser.hpp>
#include <corio/error.hpp>

namespace frame = corio::detail::tcp_frame;
using corio::detail::local_mappings;
using corio::detail::tcp_frame_parser;
using fault = tcp_frame_parser::fault;
using bytes = std::vector<std::byte>;

namespace {

constexpr std::uint64_t window_offset = 4096;
constexpr std::size_t window_size = 256;
constexpr std::size_t guard = 64;
constexpr std::byte guard_byte{0xee};

/// A PROT_WRITE mapping of 256 bytes at offset 4096, with guard bytes on
/// both sides that must never change, and a PROT_NONE one at 8192.
struct fixture {
    fixture() {
        off_t mapped = 0;
        BOOST_TEST_REQUIRE(!mappings.add(memory.data() + guard, window_size, PROT_WRITE,
                                         window_offset, mapped));
        BOOST_TEST_REQUIRE(!mappings.add(readonly.data(), readonly.size(), PROT_NONE, 8192, mapped));
    }

    std::byte* window() { return memory.data() + guard; }

    bool guards_intact() const {
        const auto is_guard = [](std::byte b) { return b == guard_byte; };
        return std::all_of(memory.begin(), memory.begin() + guard, is_guard) &&
               std::all_of(memory.end() - guard, memory.end(), is_guard) &&
               std::all_of(readonly.begin(), readonly.end(), is_guard);
    }

    bytes memory = bytes(guard + window_size + guard, guard_byte);
    bytes readonly = bytes(128, guard_byte);
    local_mappings mappings{2};
    tcp_frame_parser parser{mappings};
};

void append(bytes& out, const frame::header_bytes& h) { out.insert(out.end(), h.begin(), h.end()); }

void append_pattern(bytes& out, std::size_t n, unsigned seed) {
    for (std::size_t i = 0; i < n; ++i)
        out.push_back(static_cast<std::byte>((i * 31 + seed) & 0xff));
}

bytes hello() {
    bytes b;
    append(b, frame::encode_hello(4));
    return b;
}

bytes with_header(frame::frame_type type, std::uint32_t length, std::uint64_t offset) {
    bytes b = hello();
    append(b, frame::encode_header(type, length, offset));
    return b;
}

/// Feeds everything, one byte at a time when `step` is 1.
tcp_frame_parser::feed_result feed_all(tcp_frame_parser& parser, const bytes& input, bytes& out,
                                       std::size_t step = std::numeric_limits<std::size_t>::max()) {
    tcp_frame_parser::feed_result total;
    while (total.consumed < input.size()) {
        const std::size_t n = std::min(step, input.size() - total.consumed);
        const auto r = parser.feed(std::span(input).subspan(total.consumed, n),
                                   std::span(out).subspan(total.delivered));
        total.consumed += r.consumed;
        total.delivered += r.delivered;
        total.ec = r.ec;
        if (r.ec || r.consumed == 0)
            break;
    }
    return total;
}

void expect_fault(const bytes& input, fault why, const boost::system::error_code& ec) {
    fixture f;
    bytes out(1024);
    const auto r = feed_all(f.parser, input, out);
    BOOST_TEST((r.ec == ec), r.ec.message());
    BOOST_TEST((f.parser.why() == why));
    BOOST_TEST((f.parser.next() == tcp_frame_parser::stage::failed));
    BOOST_TEST(f.guards_intact());
    // Failed stays failed: nothing more is taken, whatever comes.
    const auto again = f.parser.feed(std::span(input), std::span(out));
    BOOST_TEST(again.consumed == 0u);
    BOOST_TEST((again.ec == ec));
}

const boost::system::error_code protocol_error = corio::error::protocol_error;
const boost::system::error_code version_mismatch = corio::error::protocol_version_mismatch;

} // namespace

BOOST_AUTO_TEST_CASE(data_and_iowrite_frames_place_every_byte_whatever_the_split) {
    bytes wire = hello();
    bytes expected_stream;
    bytes expected_window(window_size, guard_byte);
    append(wire, frame::encode_header(frame::frame_type::data, 100, 0));
    append_pattern(wire, 100, 1);
    append_pattern(expected_stream, 100, 1);
    append(wire, frame::encode_header(frame::frame_type::iowrite, 50, window_offset + 10));
    append_pattern(wire, 50, 2);
    bytes iowrite_bytes;
    append_pattern(iowrite_bytes, 50, 2);
    std::copy(iowrite_bytes.begin(), iowrite_bytes.end(), expected_window.begin() + 10);
    append(wire, frame::encode_header(frame::frame_type::data, 7, 0));
    append_pattern(wire, 7, 3);
    append_pattern(expected_stream, 7, 3);
    // An iowrite filling its mapping exactly, to the last byte.
    append(wire, frame::encode_header(frame::frame_type::iowrite, 16, window_offset + 240));
    append_pattern(wire, 16, 4);
    bytes tail;
    append_pattern(tail, 16, 4);
    std::copy(tail.begin(), tail.end(), expected_window.begin() + 240);

    for (const std::size_t step : {std::size_t{1}, std::size_t{3}, std::size_t{17}, wire.size()}) {
        fixture f;
        std::fill_n(f.window(), window_size, guard_byte);
        bytes out(expected_stream.size());
        const auto r = feed_all(f.parser, wire, out, step);
        BOOST_TEST(!r.ec, r.ec.message());
        BOOST_TEST(r.consumed == wire.size());
        BOOST_TEST(r.delivered == expected_stream.size());
        BOOST_TEST(out == expected_stream);
        BOOST_TEST(std::equal(expected_window.begin(), expected_window.end(), f.window()));
        BOOST_TEST(f.guards_intact());
        BOOST_TEST(f.parser.peer_iomap_size() == 4u);
        BOOST_TEST((f.parser.end_of_stream() == boost::asio::error::eof));
    }
}

BOOST_AUTO_TEST_CASE(a_full_stream_buffer_stops_the_parser_before_stream_bytes) {
    fixture f;
    bytes wire = with_header(frame::frame_type::data, 10, 0);
    append_pattern(wire, 10, 5);
    bytes out(4);
    auto r = f.parser.feed(wire, out);
    BOOST_TEST(!r.ec);
    BOOST_TEST(r.delivered == 4u);
    BOOST_TEST(r.consumed == 32u + 4u);
    BOOST_TEST((f.parser.next() == tcp_frame_parser::stage::stream_payload));
    BOOST_TEST(f.parser.payload_remaining() == 6u);
}

BOOST_AUTO_TEST_CASE(a_peer_that_is_not_framed_is_refused_at_its_first_bytes) {
    bytes plain = {std::byte{'H'}, std::byte{'T'}, std::byte{'T'}, std::byte{'P'}};
    plain.resize(16, std::byte{' '});
    expect_fault(plain, fault::bad_magic, protocol_error);
}

BOOST_AUTO_TEST_CASE(a_hello_of_another_version_is_a_version_mismatch) {
    bytes b = hello();
    b[8] = std::byte{2};
    expect_fault(b, fault::bad_version, version_mismatch);
}

BOOST_AUTO_TEST_CASE(a_hello_with_reserved_bits_set_is_refused) {
    bytes b = hello();
    b[10] = std::byte{1};
    expect_fault(b, fault::nonzero_reserved, protocol_error);
}

BOOST_AUTO_TEST_CASE(a_header_of_another_version_is_a_version_mismatch) {
    bytes b = with_header(frame::frame_type::data, 1, 0);
    b[16] = std::byte{0};
    expect_fault(b, fault::bad_version, version_mismatch);
}

BOOST_AUTO_TEST_CASE(an_unknown_frame_type_is_refused) {
    for (const int type : {0, 3, 255}) {
        bytes b = with_header(frame::frame_type::data, 1, 0);
        b[17] = static_cast<std::byte>(type);
        expect_fault(b, fault::unknown_type, protocol_error);
    }
}

BOOST_AUTO_TEST_CASE(a_header_with_reserved_bits_set_is_refused) {
    bytes b = with_header(frame::frame_type::data, 1, 0);
    b[19] = std::byte{0x80};
    expect_fault(b, fault::nonzero_reserved, protocol_error);
}

BOOST_AUTO_TEST_CASE(an_empty_frame_is_refused) {
    expect_fault(with_header(frame::frame_type::data, 0, 0), fault::empty_frame, protocol_error);
    expect_fault(with_header(frame::frame_type::iowrite, 0, window_offset), fault::empty_frame,
                 protocol_error);
}

BOOST_AUTO_TEST_CASE(an_oversize_length_is_refused) {
    expect_fault(with_header(frame::frame_type::data, frame::max_payload + 1, 0),
                 fault::oversize_length, protocol_error);
    expect_fault(with_header(frame::frame_type::iowrite, 0xffffffff, window_offset),
                 fault::oversize_length, protocol_error);
}

BOOST_AUTO_TEST_CASE(a_data_frame_with_an_offset_is_refused) {
    expect_fault(with_header(frame::frame_type::data, 1, 1), fault::data_with_offset,
                 protocol_error);
}

BOOST_AUTO_TEST_CASE(an_iowrite_outside_every_mapping_is_refused) {
    bytes b = with_header(frame::frame_type::iowrite, 8, window_offset - 8);
    append_pattern(b, 8, 6);
    expect_fault(b, fault::unknown_mapping, protocol_error);
    expect_fault(with_header(frame::frame_type::iowrite, 1, window_offset + window_size),
                 fault::unknown_mapping, protocol_error);
    expect_fault(with_header(frame::frame_type::iowrite, 1, 0), fault::unknown_mapping,
                 protocol_error);
}

BOOST_AUTO_TEST_CASE(an_iowrite_into_a_prot_none_mapping_is_refused) {
    bytes b = with_header(frame::frame_type::iowrite, 8, 8192);
    append_pattern(b, 8, 7);
    expect_fault(b, fault::mapping_not_writable, protocol_error);
}

BOOST_AUTO_TEST_CASE(an_iowrite_crossing_its_mappings_end_is_refused_before_any_byte_lands) {
    bytes b = with_header(frame::frame_type::iowrite, 17, window_offset + 240);
    append_pattern(b, 17, 8);
    fixture f;
    std::fill_n(f.window(), window_size, std::byte{0});
    bytes out(16);
    const auto r = feed_all(f.parser, b, out);
    BOOST_TEST((r.ec == protocol_error));
    BOOST_TEST((f.parser.why() == fault::crosses_mapping_end));
    BOOST_TEST(std::all_of(f.window(), f.window() + window_size,
                           [](std::byte x) { return x == std::byte{0}; }));
    BOOST_TEST(f.guards_intact());
}

BOOST_AUTO_TEST_CASE(offsets_near_the_top_of_the_range_do_not_wrap_around) {
    expect_fault(with_header(frame::frame_type::iowrite, 16, ~std::uint64_t{0} - 8),
                 fault::unknown_mapping, protocol_error);
    expect_fault(with_header(frame::frame_type::iowrite, frame::max_payload,
                             window_offset + window_size - 1),
                 fault::crosses_mapping_end, protocol_error);
}

BOOST_AUTO_TEST_CASE(a_stream_ending_inside_a_header_is_a_truncated_header) {
    for (const std::size_t cut : {std::size_t{1}, std::size_t{15}, std::size_t{16 + 1},
                                  std::size_t{16 + 15}}) {
        fixture f;
        bytes b = with_header(frame::frame_type::data, 4, 0);
        b.resize(cut);
        bytes out(16);
        BOOST_TEST(!feed_all(f.parser, b, out).ec);
        BOOST_TEST((f.parser.end_of_stream() == protocol_error));
        BOOST_TEST((f.parser.why() == fault::truncated_header));
    }
}

BOOST_AUTO_TEST_CASE(a_stream_ending_inside_an_iowrite_payload_is_truncated) {
    fixture f;
    bytes b = with_header(frame::frame_type::iowrite, 20, window_offset);
    append_pattern(b, 5, 9);
    bytes out(16);
    BOOST_TEST(!feed_all(f.parser, b, out).ec);
    BOOST_TEST((f.parser.end_of_stream() == protocol_error));
    BOOST_TEST((f.parser.why() == fault::truncated_payload));
}

BOOST_AUTO_TEST_CASE(a_stream_ending_at_a_boundary_or_inside_data_is_an_orderly_end) {
    {
        fixture f;
        BOOST_TEST((f.parser.end_of_stream() == boost::asio::error::eof));
    }
    {
        fixture f;
        bytes out(16);
        BOOST_TEST(!feed_all(f.parser, hello(), out).ec);
        BOOST_TEST((f.parser.end_of_stream() == boost::asio::error::eof));
    }
    {
        // A sender whose write_some took part of a frame, then closed.
        fixture f;
        bytes b = with_header(frame::frame_type::data, 20, 0);
        append_pattern(b, 5, 10);
        bytes out(16);
        BOOST_TEST(feed_all(f.parser, b, out).delivered == 5u);
        BOOST_TEST((f.parser.end_of_stream() == boost::asio::error::eof));
    }
}

BOOST_AUTO_TEST_CASE(unmapping_the_target_of_a_frame_in_progress_fails_the_parser) {
    fixture f;
    bytes b = with_header(frame::frame_type::iowrite, 20, window_offset);
    append_pattern(b, 5, 11);
    bytes out(16);
    BOOST_TEST(!feed_all(f.parser, b, out).ec);
    // Another region going away changes nothing.
    f.parser.mapping_removed(f.readonly.data(), f.readonly.size());
    BOOST_TEST((f.parser.next() == tcp_frame_parser::stage::mapping_payload));
    BOOST_TEST(!f.mappings.remove(f.window(), window_size));
    f.parser.mapping_removed(f.window(), window_size);
    BOOST_TEST((f.parser.why() == fault::mapping_withdrawn));
    bytes more;
    append_pattern(more, 15, 12);
    const auto r = f.parser.feed(more, out);
    BOOST_TEST((r.ec == protocol_error));
    BOOST_TEST(r.consumed == 0u);
}
