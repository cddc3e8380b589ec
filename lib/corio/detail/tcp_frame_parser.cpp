#include "corio/detail/tcp_frame_parser.hpp"

#include <algorithm>
#include <cstring>
#include <functional>

#include <boost/asio/error.hpp>

#include <corio/error.hpp>

namespace corio::detail {

using boost::system::error_code;
namespace frame = tcp_frame;

error_code tcp_frame_parser::fail(fault f) noexcept {
    if (stage_ == stage::failed)
        return error_;
    stage_ = stage::failed;
    fault_ = f;
    remaining_ = 0;
    destination_ = nullptr;
    error_ = f == fault::bad_version ? make_error_code(error::protocol_version_mismatch)
                                     : make_error_code(error::protocol_error);
    return error_;
}

error_code tcp_frame_parser::header_received(std::size_t n) noexcept {
    if (stage_ == stage::failed)
        return error_;
    if (stage_ != stage::hello && stage_ != stage::header) {
        // Lookahead bytes arrive only once the payload before them is done.
        if (remaining_ != 0 || n == 0)
            return n == 0 ? error_code{} : fail(fault::truncated_payload);
        stage_ = stage::header;
        filled_ = 0;
    }
    filled_ += std::min(n, frame::header_size - filled_);
    if (filled_ < frame::header_size)
        return {};
    filled_ = 0;
    return stage_ == stage::hello ? check_hello() : check_header();
}

error_code tcp_frame_parser::check_hello() noexcept {
    for (std::size_t i = 0; i < frame::magic.size(); ++i)
        if (header_[i] != std::byte{frame::magic[i]})
            return fail(fault::bad_magic);
    if (header_[8] != std::byte{frame::version})
        return fail(fault::bad_version);
    if (frame::read_be(&header_[9], 3) != 0)
        return fail(fault::nonzero_reserved);
    peer_iomap_size_ = static_cast<std::uint32_t>(frame::read_be(&header_[12], 4));
    stage_ = stage::header;
    return {};
}

error_code tcp_frame_parser::check_header() noexcept {
    if (header_[0] != std::byte{frame::version})
        return fail(fault::bad_version);
    if (header_[2] != std::byte{0} || header_[3] != std::byte{0})
        return fail(fault::nonzero_reserved);
    const auto length = frame::read_be(&header_[4], 4);
    const auto offset = frame::read_be(&header_[8], 8);
    const auto type = std::to_integer<std::uint8_t>(header_[1]);
    if (type != static_cast<std::uint8_t>(frame::frame_type::data) &&
        type != static_cast<std::uint8_t>(frame::frame_type::iowrite))
        return fail(fault::unknown_type);
    if (length == 0)
        return fail(fault::empty_frame);
    if (length > frame::max_payload)
        return fail(fault::oversize_length);
    if (type == static_cast<std::uint8_t>(frame::frame_type::data)) {
        if (offset != 0)
            return fail(fault::data_with_offset);
        stage_ = stage::stream_payload;
        remaining_ = static_cast<std::size_t>(length);
        return {};
    }
    std::byte* destination = nullptr;
    switch (mappings_->find(offset, length, destination)) {
    case local_mappings::fit::inside:
        break;
    case local_mappings::fit::unknown:
        return fail(fault::unknown_mapping);
    case local_mappings::fit::not_writable:
        return fail(fault::mapping_not_writable);
    case local_mappings::fit::crosses_end:
        return fail(fault::crosses_mapping_end);
    }
    stage_ = stage::mapping_payload;
    remaining_ = static_cast<std::size_t>(length);
    destination_ = destination;
    return {};
}

void tcp_frame_parser::payload_received(std::size_t n) noexcept {
    if (stage_ != stage::stream_payload && stage_ != stage::mapping_payload)
        return;
    n = std::min(n, remaining_);
    remaining_ -= n;
    if (stage_ == stage::mapping_payload)
        destination_ += n;
    if (remaining_ == 0) {
        stage_ = stage::header;
        filled_ = 0;
        destination_ = nullptr;
    }
}

error_code tcp_frame_parser::end_of_stream() noexcept {
    switch (stage_) {
    case stage::hello:
    case stage::header:
        return filled_ == 0 ? error_code(boost::asio::error::eof)
                            : fail(fault::truncated_header);
    case stage::stream_payload:
        return boost::asio::error::eof;
    case stage::mapping_payload:
        return fail(fault::truncated_payload);
    case stage::failed:
        break;
    }
    return error_;
}

void tcp_frame_parser::mapping_removed(const void* base, std::size_t length) noexcept {
    if (stage_ != stage::mapping_payload)
        return;
    const auto* first = static_cast<const std::byte*>(base);
    // destination_ is inside the frame's mapping, and mappings do not overlap.
    if (std::less_equal<const std::byte*>()(first, destination_) &&
        std::less<const std::byte*>()(destination_, first + length))
        (void)fail(fault::mapping_withdrawn);
}

tcp_frame_parser::feed_result tcp_frame_parser::feed(std::span<const std::byte> input,
                                                     std::span<std::byte> stream_out) noexcept {
    feed_result result;
    while (stage_ != stage::failed && result.consumed < input.size()) {
        const auto rest = input.subspan(result.consumed);
        if (stage_ == stage::hello || stage_ == stage::header) {
            const auto space = header_space();
            const std::size_t k = std::min(space.size(), rest.size());
            std::memcpy(space.data(), rest.data(), k);
            result.consumed += k;
            if (header_received(k))
                break;
            continue;
        }
        std::size_t k = std::min(remaining_, rest.size());
        if (stage_ == stage::stream_payload) {
            k = std::min(k, stream_out.size() - result.delivered);
            if (k == 0)
                break;
            std::memcpy(stream_out.data() + result.delivered, rest.data(), k);
            result.delivered += k;
        } else {
            std::memcpy(destination_, rest.data(), k);
        }
        result.consumed += k;
        payload_received(k);
    }
    result.ec = error_;
    return result;
}

} // namespace corio::detail
