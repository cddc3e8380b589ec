#define BOOST_TEST_MODULE data_pattern
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <numeric>
#include <vector>

#include <coriostream/data_pattern.hpp>

// The expected bytes were printed by rdma-core v44's own format_buf and
// verify_buf (librdmacm/examples/common.c), compiled into a scratch program
// and called in the same order as below.

using coriostream::data_pattern;

namespace {

std::vector<std::uint8_t> formatted(data_pattern& pattern, std::size_t size) {
    std::vector<std::uint8_t> buffer(size, 0xee);
    pattern.format(buffer);
    return buffer;
}

} // namespace

BOOST_AUTO_TEST_CASE(format_counts_bytes_across_calls) {
    data_pattern pattern;
    const std::vector<std::uint8_t> first{0, 1, 2, 3, 4};
    const std::vector<std::uint8_t> second{5, 6, 7};
    BOOST_TEST(formatted(pattern, 5) == first, boost::test_tools::per_element());
    BOOST_TEST(formatted(pattern, 3) == second, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(format_wraps_at_256) {
    data_pattern pattern;
    formatted(pattern, 8);
    const auto long_buffer = formatted(pattern, 250);
    BOOST_TEST(long_buffer.front() == 8U);
    BOOST_TEST(long_buffer.back() == 1U); // (8 + 249) mod 256
    const std::vector<std::uint8_t> after{2, 3, 4, 5};
    BOOST_TEST(formatted(pattern, 4) == after, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(format_of_nothing_leaves_the_counter) {
    data_pattern pattern;
    formatted(pattern, 0);
    BOOST_TEST(formatted(pattern, 1).front() == 0U);
}

BOOST_AUTO_TEST_CASE(verify_accepts_what_format_wrote) {
    data_pattern sender;
    data_pattern receiver;
    for (const std::size_t size : {16U, 1000U, 1U, 4096U, 63U}) {
        const auto buffer = formatted(sender, size);
        BOOST_TEST(!receiver.verify(buffer).has_value());
    }
}

BOOST_AUTO_TEST_CASE(verify_counts_the_failing_byte_over_every_byte_verified) {
    data_pattern pattern;
    std::vector<std::uint8_t> buffer(300);
    std::iota(buffer.begin(), buffer.end(), std::uint8_t{0});
    BOOST_TEST(!pattern.verify(std::span(buffer).first(16)).has_value());
    std::iota(buffer.begin(), buffer.end(), std::uint8_t{16});
    BOOST_TEST(!pattern.verify(std::span(buffer).first(260)).has_value());
    // verify_buf printed "data verification failed byte 283" here.
    std::iota(buffer.begin(), buffer.end(), static_cast<std::uint8_t>(276));
    buffer[7] ^= 1;
    const auto failed_at = pattern.verify(std::span(buffer).first(10));
    BOOST_TEST_REQUIRE(failed_at.has_value());
    BOOST_TEST(*failed_at == 283U);
}

BOOST_AUTO_TEST_CASE(sending_and_receiving_counters_are_independent) {
    // A side formats what it sends and verifies what it receives: rstream's
    // client formats its 16-byte handshake, then verifies the server's.
    data_pattern pattern;
    formatted(pattern, 16);
    std::vector<std::uint8_t> answer(16);
    std::iota(answer.begin(), answer.end(), std::uint8_t{0});
    BOOST_TEST(!pattern.verify(answer).has_value());
    BOOST_TEST(formatted(pattern, 1).front() == 16U);
}

BOOST_AUTO_TEST_CASE(patterns_are_independent_of_each_other) {
    data_pattern one;
    data_pattern other;
    formatted(one, 10);
    BOOST_TEST(formatted(other, 1).front() == 0U);
}
