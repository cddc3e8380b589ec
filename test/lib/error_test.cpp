#define BOOST_TEST_MODULE error
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <iterator>
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
    const error all[] = {error::no_rdma_device,         error::no_remote_mapping,
                         error::iowrite_out_of_bounds,  error::option_after_connect,
                         error::not_supported_by_transport, error::protocol_error,
                         error::protocol_version_mismatch, error::stream_write_unfinished,
                         error::rsocket_service_full};
    std::set<std::string> messages;
    for (auto e : all) {
        const auto text = make_error_code(e).message();
        BOOST_TEST(text.find("Unknown") == std::string::npos);
        messages.insert(text);
    }
    BOOST_TEST(messages.size() == std::size(all));
    BOOST_TEST(boost::system::error_code(999, corio::error_category()).message() ==
               "Unknown corio error");
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
