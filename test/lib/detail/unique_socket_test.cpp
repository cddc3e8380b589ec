#define BOOST_TEST_MODULE unique_socket
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <sys/socket.h>

#include <boost/asio/error.hpp>

#include <corio/detail/posix_socket_ops.hpp>
#include <corio/detail/unique_socket.hpp>

using corio::detail::posix_socket_ops;
using corio::detail::unique_socket;

namespace {

bool is_open_fd(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

int new_socket() {
    boost::system::error_code ec;
    const int fd = posix_socket_ops.open(AF_INET, SOCK_STREAM, 0, ec);
    BOOST_TEST_REQUIRE(!ec, ec.message());
    return fd;
}

} // namespace

BOOST_AUTO_TEST_CASE(closes_on_destruction) {
    const int fd = new_socket();
    { unique_socket s(fd, posix_socket_ops); BOOST_TEST(s.is_valid()); }
    BOOST_TEST(!is_open_fd(fd));
}

BOOST_AUTO_TEST_CASE(release_gives_up_ownership) {
    const int fd = new_socket();
    int released = -1;
    {
        unique_socket s(fd, posix_socket_ops);
        released = s.release();
        BOOST_TEST(!s.is_valid());
        BOOST_TEST(s.ops() == nullptr);
    }
    BOOST_TEST(released == fd);
    BOOST_TEST(is_open_fd(fd));
    unique_socket cleanup(fd, posix_socket_ops);
}

BOOST_AUTO_TEST_CASE(move_transfers_ownership_and_closes_the_overwritten_socket) {
    const int a = new_socket();
    const int b = new_socket();
    unique_socket first(a, posix_socket_ops);
    unique_socket second(b, posix_socket_ops);
    second = std::move(first);
    BOOST_TEST(!first.is_valid());
    BOOST_TEST(second.get() == a);
    BOOST_TEST(!is_open_fd(b));
    unique_socket third(std::move(second));
    BOOST_TEST(third.get() == a);
    BOOST_TEST(third.ops() == &posix_socket_ops);
}

BOOST_AUTO_TEST_CASE(reset_reports_what_close_said) {
    unique_socket s(new_socket(), posix_socket_ops);
    BOOST_TEST(!s.reset());
    BOOST_TEST(!s.is_valid());
    BOOST_TEST(!s.reset());

    unique_socket bogus(1 << 20, posix_socket_ops);
    BOOST_TEST((bogus.reset() == boost::asio::error::bad_descriptor));
}
