#define BOOST_TEST_MODULE buffer_iovecs
#include <boost/test/unit_test.hpp>

#include <array>
#include <cstdint>
#include <vector>

#include <boost/asio/buffer.hpp>

#include <corio/detail/buffer_iovecs.hpp>

// The iovec array readv and writev get for a buffer sequence: one buffer
// takes a path of its own, sequences the loop; both must leave out empty
// buffers and report the same counts.

using corio::detail::buffer_iovecs;

BOOST_AUTO_TEST_CASE(one_buffer_is_one_iovec_of_its_bytes) {
    std::array<std::uint8_t, 40> bytes{};
    const buffer_iovecs mutable_iov(boost::asio::buffer(bytes.data() + 3, 17));
    BOOST_TEST(mutable_iov.count() == 1);
    BOOST_TEST(mutable_iov.total_size() == 17u);
    BOOST_TEST(mutable_iov.data()[0].iov_base == static_cast<void*>(bytes.data() + 3));
    BOOST_TEST(mutable_iov.data()[0].iov_len == 17u);

    const boost::asio::const_buffer constant(bytes.data(), bytes.size());
    const buffer_iovecs const_iov(constant);
    BOOST_TEST(const_iov.count() == 1);
    BOOST_TEST(const_iov.total_size() == bytes.size());
    BOOST_TEST(const_iov.data()[0].iov_base == static_cast<void*>(bytes.data()));
}

BOOST_AUTO_TEST_CASE(an_empty_buffer_is_no_iovec_alone_or_in_a_sequence) {
    std::array<std::uint8_t, 8> bytes{};
    const buffer_iovecs alone(boost::asio::mutable_buffer(bytes.data(), 0));
    BOOST_TEST(alone.count() == 0);
    BOOST_TEST(alone.total_size() == 0u);

    const std::vector<boost::asio::const_buffer> sequence{
        {bytes.data(), 0}, {bytes.data(), 3}, {bytes.data() + 3, 0}, {bytes.data() + 3, 5}};
    const buffer_iovecs iov(sequence);
    BOOST_TEST(iov.count() == 2);
    BOOST_TEST(iov.total_size() == 8u);
    BOOST_TEST(iov.data()[0].iov_len == 3u);
    BOOST_TEST(iov.data()[1].iov_base == static_cast<void*>(bytes.data() + 3));
    BOOST_TEST(iov.data()[1].iov_len == 5u);
}

BOOST_AUTO_TEST_CASE(a_sequence_longer_than_max_buffers_is_cut_there) {
    std::vector<std::uint8_t> bytes(buffer_iovecs::max_buffers + 10);
    std::vector<boost::asio::mutable_buffer> sequence;
    for (auto& byte : bytes)
        sequence.emplace_back(&byte, 1);
    const buffer_iovecs iov(sequence);
    BOOST_TEST(iov.count() == buffer_iovecs::max_buffers);
    BOOST_TEST(iov.total_size() == static_cast<std::size_t>(buffer_iovecs::max_buffers));
    BOOST_TEST(iov.data()[buffer_iovecs::max_buffers - 1].iov_base ==
               static_cast<void*>(&bytes[buffer_iovecs::max_buffers - 1]));
}
