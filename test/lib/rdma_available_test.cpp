#define BOOST_TEST_MODULE rdma_available
#include <boost/test/unit_test.hpp>

#include <sys/socket.h>

#include <corio/detail/rsocket_ops.hpp>
#include <corio/detail/unique_socket.hpp>
#include <corio/error.hpp>
#include <corio/rdma_available.hpp>

BOOST_AUTO_TEST_CASE(agrees_with_what_rsocket_says) {
    boost::system::error_code ec;
    corio::detail::unique_socket s(corio::detail::rsocket_ops.open(AF_INET, SOCK_STREAM, 0, ec),
                                   corio::detail::rsocket_ops);
    BOOST_TEST(corio::rdma_available() == s.is_valid());
    if (!s.is_valid())
        BOOST_TEST((ec == corio::condition::no_rdma_device), ec.message());
}

BOOST_AUTO_TEST_CASE(answers_the_same_twice) {
    BOOST_TEST(corio::rdma_available() == corio::rdma_available());
}
