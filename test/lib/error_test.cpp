#define BOOST_TEST_MODULE error
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <cstddef>
#include <set>
#include <string>

#include <boost/asio/error.hpp>

#include <corio/error.hpp>

using corio::condition;
using corio::error;

BOOST_AUTO_TEST_CASE(codes_carry_the_corio_category_and_a_message) {
    const boost::system::error_code ec = error::iowrite_out_of_bounds;
    BOOST_TEST(ec.category().name() == std::string("corio"));
    BOOST_TEST(ec.message() == "The iowrite runs past the end of the peer mapping");
}

BOOST_AUTO_TEST_CASE(every_error_has_its_own_message) {
    // Every code from the first to the last: one added without a message
    // says "Unknown corio error".
    constexpr int first = static_cast<int>(error::no_rdma_device);
    constexpr int last = static_cast<int>(error::iomap_slots_exhausted);
    std::set<std::string> messages;
    for (int value = first; value <= last; ++value) {
        const auto text = make_error_code(static_cast<error>(value)).message();
        BOOST_TEST(text.find("Unknown") == std::string::npos, value << ": " << text);
        messages.insert(text);
    }
    BOOST_TEST(messages.size() == static_cast<std::size_t>(last - first + 1));
    BOOST_TEST(boost::system::error_code(999, corio::error_category()).message() ==
               "Unknown corio error");
}

BOOST_AUTO_TEST_CASE(capacity_errors_name_their_variable) {
    BOOST_TEST(make_error_code(error::rsocket_cm_capacity_invalid)
                   .message()
                   .find("CORIO_RSOCKET_CM_CAPACITY") != std::string::npos);
    BOOST_TEST(make_error_code(error::rsocket_listen_capacity_invalid)
                   .message()
                   .find("CORIO_RSOCKET_LISTEN_CAPACITY") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(no_rdma_device_condition_matches_enodev_from_rsocket) {
    const boost::system::error_code from_errno(ENODEV, boost::system::system_category());
    BOOST_TEST((from_errno == condition::no_rdma_device));
    BOOST_TEST((boost::system::error_code(error::no_rdma_device) == condition::no_rdma_device));
    BOOST_TEST((boost::system::error_code(ENOENT, boost::system::system_category()) !=
                condition::no_rdma_device));
    BOOST_TEST((boost::system::error_code(error::protocol_error) != condition::no_rdma_device));
}

BOOST_AUTO_TEST_CASE(corio_codes_do_not_collide_with_asio_errors) {
    const boost::system::error_code ec = error::no_rdma_device;
    BOOST_TEST((ec != boost::asio::error::eof));
    BOOST_TEST((ec != boost::asio::error::operation_aborted));
}

BOOST_AUTO_TEST_CASE(condition_has_a_message) {
    BOOST_TEST(make_error_condition(condition::no_rdma_device).message() ==
               "No RDMA device is available");
}
