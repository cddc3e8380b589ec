#define BOOST_TEST_MODULE rsocket_ops
#include <boost/test/unit_test.hpp>

#include <array>
#include <cstdint>
#include <thread>
#include <type_traits>

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <boost/asio/error.hpp>

#include <corio/detail/rsocket_ops.hpp>
#include <corio/detail/unique_socket.hpp>
#include <corio/error.hpp>
#include <corio/rdma_available.hpp>

#include "loopback_pair.hpp"

// These run on any host: they cover what rsocket_ops does without an RDMA
// device. The same calls on real rsockets are in rsocket_ops_rdma_test.cpp.

using corio::detail::poll_timeout;
using corio::detail::rsocket_ops;
using corio::detail::unique_socket;
namespace utf = boost::unit_test;

namespace {

struct no_rdma_device {
    utf::assertion_result operator()(utf::test_unit_id) const {
        return utf::assertion_result(!corio::rdma_available());
    }
};

struct event_fd {
    int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    ~event_fd() { ::close(fd); }
    void signal() const {
        const std::uint64_t one = 1;
        BOOST_TEST_REQUIRE(::write(fd, &one, sizeof one) == static_cast<ssize_t>(sizeof one));
    }
};

std::size_t poll_ready(pollfd* fds, nfds_t n, poll_timeout timeout) {
    boost::system::error_code ec;
    const auto ready = rsocket_ops.poll(fds, n, timeout, ec);
    BOOST_TEST_REQUIRE(!ec, ec.message());
    return ready;
}

} // namespace

// Only 0 and -1 may ever reach rpoll: a finite timeout leaks a counter in
// rdma-core v44 to v62. The interface makes anything else fail to compile.
static_assert(static_cast<int>(poll_timeout::immediate) == 0);
static_assert(static_cast<int>(poll_timeout::infinite) == -1);
static_assert(!std::is_convertible_v<int, poll_timeout>);
static_assert(!std::is_invocable_v<decltype(corio::detail::socket_ops::poll), pollfd*, nfds_t, int,
                                   boost::system::error_code&>);

BOOST_AUTO_TEST_CASE(rsocket_without_a_device_reports_no_rdma_device,
                     *utf::precondition(no_rdma_device())) {
    for (int type : std::array<int, 2>{SOCK_STREAM, SOCK_STREAM | SOCK_NONBLOCK}) {
        boost::system::error_code ec;
        const int s = rsocket_ops.open(AF_INET, type, 0, ec);
        BOOST_TEST(s == -1);
        BOOST_TEST((ec == corio::error::no_rdma_device), ec.message());
        BOOST_TEST((ec == corio::condition::no_rdma_device));
    }
}

BOOST_AUTO_TEST_CASE(rpoll_sees_an_eventfd) {
    event_fd event;
    pollfd fds[1] = {{event.fd, POLLIN, 0}};
    BOOST_TEST(poll_ready(fds, 1, poll_timeout::immediate) == 0u);
    event.signal();
    BOOST_TEST(poll_ready(fds, 1, poll_timeout::immediate) == 1u);
    BOOST_TEST((fds[0].revents & POLLIN) != 0);
}

BOOST_AUTO_TEST_CASE(rpoll_sees_a_socketpair) {
    int pair[2];
    BOOST_TEST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0);
    pollfd fds[2] = {{pair[0], POLLIN, 0}, {pair[1], POLLOUT, 0}};
    BOOST_TEST(poll_ready(fds, 2, poll_timeout::immediate) == 1u);
    BOOST_TEST(fds[0].revents == 0);
    BOOST_TEST((fds[1].revents & POLLOUT) != 0);
    BOOST_TEST_REQUIRE(::write(pair[1], "x", 1) == 1);
    BOOST_TEST(poll_ready(fds, 2, poll_timeout::immediate) == 2u);
    BOOST_TEST((fds[0].revents & POLLIN) != 0);
    ::close(pair[0]);
    ::close(pair[1]);
}

BOOST_AUTO_TEST_CASE(an_infinite_rpoll_wakes_when_another_thread_signals) {
    event_fd wake;
    auto [a, b] = corio::test::make_tcp_loopback_pair();
    pollfd fds[2] = {{a.get(), POLLIN, 0}, {wake.fd, POLLIN, 0}};
    // Boost.Test's assertions are not thread-safe: the signaller writes the
    // eventfd itself and this thread checks what happened.
    ssize_t written = 0;
    std::thread signaller([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        const std::uint64_t one = 1;
        written = ::write(wake.fd, &one, sizeof one);
    });
    const auto ready = poll_ready(fds, 2, poll_timeout::infinite);
    signaller.join();
    BOOST_TEST(written == static_cast<ssize_t>(sizeof(std::uint64_t)));
    BOOST_TEST(ready == 1u);
    BOOST_TEST(fds[0].revents == 0);
    BOOST_TEST((fds[1].revents & POLLIN) != 0);
}

BOOST_AUTO_TEST_CASE(rclose_of_an_unknown_socket_is_bad_descriptor) {
    // v44 returns a positive EBADF here rather than -1 and errno.
    BOOST_TEST((rsocket_ops.close(1 << 20) == boost::asio::error::bad_descriptor));
    unique_socket owner(1 << 20, rsocket_ops);
    BOOST_TEST((owner.reset() == boost::asio::error::bad_descriptor));
}

BOOST_AUTO_TEST_CASE(calls_on_an_unknown_socket_fail_with_an_error_code) {
    boost::system::error_code ec;
    std::array<char, 8> buf{};
    BOOST_TEST(rsocket_ops.recv(1 << 20, buf.data(), buf.size(), 0, ec) == 0u);
    BOOST_TEST((ec == boost::asio::error::bad_descriptor), ec.message());
    BOOST_TEST(rsocket_ops.send(1 << 20, buf.data(), buf.size(), 0, ec) == 0u);
    BOOST_TEST((ec == boost::asio::error::bad_descriptor), ec.message());
    BOOST_TEST((rsocket_ops.set_nonblocking(1 << 20, true) == boost::asio::error::bad_descriptor));
    BOOST_TEST(rsocket_ops.iomap(1 << 20, buf.data(), buf.size(), PROT_WRITE, 0, ec) == -1);
    BOOST_TEST((ec == boost::asio::error::bad_descriptor), ec.message());
}

BOOST_AUTO_TEST_CASE(data_calls_on_numbers_the_seam_never_opened_are_bad_descriptor) {
    // v44's data calls index librdmacm's table unchecked: each of these
    // numbers would crash them (a negative one, a kernel socket's, the
    // table's last), so the seam must refuse them before the call.
    const auto kernel = corio::test::make_tcp_loopback_pair();
    std::array<char, 8> buf{};
    std::array<iovec, 2> one_and_two{{{buf.data(), 4}, {buf.data() + 4, 4}}};
    for (const int s : {-1, 0, kernel.first.get(), 65535}) {
        BOOST_TEST_CONTEXT("number " << s) {
            boost::system::error_code ec;
            for (const int count : {1, 2}) {
                BOOST_TEST(rsocket_ops.readv(s, one_and_two.data(), count, ec) == 0u);
                BOOST_TEST((ec == boost::asio::error::bad_descriptor), ec.message());
                BOOST_TEST(rsocket_ops.writev(s, one_and_two.data(), count, ec) == 0u);
                BOOST_TEST((ec == boost::asio::error::bad_descriptor), ec.message());
            }
            BOOST_TEST(rsocket_ops.recv(s, buf.data(), buf.size(), 0, ec) == 0u);
            BOOST_TEST((ec == boost::asio::error::bad_descriptor), ec.message());
            BOOST_TEST(rsocket_ops.iowrite(s, buf.data(), 1, 0, {0, 8}, 0, ec) == 0u);
            BOOST_TEST((ec == boost::asio::error::bad_descriptor), ec.message());
        }
    }
}

BOOST_AUTO_TEST_CASE(iowrite_past_a_mapping_is_refused_before_riowrite) {
    // Were riowrite reached, the unknown socket would give EBADF; the guard
    // answers first, so a v44 endless loop can never start.
    std::array<char, 64> buf{};
    boost::system::error_code ec;
    const corio::detail::remote_mapping target{0, 32};
    BOOST_TEST(rsocket_ops.iowrite(1 << 20, buf.data(), 33, 0, target, 0, ec) == 0u);
    BOOST_TEST((ec == corio::error::iowrite_out_of_bounds), ec.message());
    BOOST_TEST(rsocket_ops.iowrite(1 << 20, buf.data(), 1, 32, target, 0, ec) == 0u);
    BOOST_TEST((ec == corio::error::iowrite_out_of_bounds), ec.message());
    BOOST_TEST(rsocket_ops.iowrite(1 << 20, buf.data(), 0, 0, target, 0, ec) == 0u);
    BOOST_TEST(!ec);
}

BOOST_AUTO_TEST_CASE(iowrite_failure_is_not_read_as_a_huge_count) {
    // riowrite returns (size_t)-1 for failure; it must surface as an error.
    std::array<char, 64> buf{};
    boost::system::error_code ec;
    const auto n = rsocket_ops.iowrite(1 << 20, buf.data(), 16, 0, {0, 64}, 0, ec);
    BOOST_TEST(n == 0u);
    BOOST_TEST((ec == boost::asio::error::bad_descriptor), ec.message());
}
