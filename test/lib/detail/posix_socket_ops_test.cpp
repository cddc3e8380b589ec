#define BOOST_TEST_MODULE posix_socket_ops
#include <boost/test/unit_test.hpp>

#include <array>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>

#include <corio/detail/posix_socket_ops.hpp>
#include <corio/detail/unique_socket.hpp>
#include <corio/error.hpp>

#include "loopback_pair.hpp"
#include "skip_if.hpp"

using corio::detail::poll_timeout;
using corio::detail::posix_socket_ops;
using corio::detail::unique_socket;
using corio::test::make_tcp_loopback_pair;

namespace {

const auto& ops = posix_socket_ops;

std::vector<unsigned char> pattern(std::size_t n) {
    std::vector<unsigned char> v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = static_cast<unsigned char>(i * 7 + 3);
    return v;
}

void send_all(int s, const std::vector<unsigned char>& data) {
    std::size_t sent = 0;
    while (sent < data.size()) {
        boost::system::error_code ec;
        sent += ops.send(s, data.data() + sent, data.size() - sent, 0, ec);
        BOOST_TEST_REQUIRE(!ec, ec.message());
    }
}

std::vector<unsigned char> recv_exactly(int s, std::size_t n) {
    std::vector<unsigned char> out(n);
    std::size_t got = 0;
    while (got < n) {
        boost::system::error_code ec;
        got += ops.recv(s, out.data() + got, n - got, 0, ec);
        BOOST_TEST_REQUIRE(!ec, ec.message());
    }
    return out;
}

} // namespace

BOOST_AUTO_TEST_CASE(connect_accept_send_recv_over_ipv4) {
    auto [client, server] = make_tcp_loopback_pair(AF_INET);
    const auto data = pattern(256 * 1024);
    // Boost.Test's assertions are not thread-safe: the sender only records
    // its error, and this thread checks it.
    boost::system::error_code send_error;
    std::thread sender([&, fd = client.get()] {
        std::size_t sent = 0;
        while (sent < data.size() && !send_error)
            sent += ops.send(fd, data.data() + sent, data.size() - sent, 0, send_error);
    });
    const auto got = recv_exactly(server.get(), data.size());
    sender.join();
    BOOST_TEST(!send_error, send_error.message());
    BOOST_TEST(got == data);
}

namespace {

// Some hosts and containers have IPv6 off (no ::1 to bind).
std::optional<std::string> no_ipv6_loopback() {
    try {
        make_tcp_loopback_pair(AF_INET6);
        return std::nullopt;
    } catch (const boost::system::system_error& e) {
        return std::string("no IPv6 loopback here: ") + e.what();
    }
}

} // namespace

BOOST_AUTO_TEST_CASE(connect_accept_send_recv_over_ipv6,
                     *corio::test::skip_if(no_ipv6_loopback)) {
    auto pair = make_tcp_loopback_pair(AF_INET6);
    const auto data = pattern(1000);
    send_all(pair.second.get(), data);
    BOOST_TEST(recv_exactly(pair.first.get(), data.size()) == data);
}

BOOST_AUTO_TEST_CASE(gather_and_scatter) {
    auto [client, server] = make_tcp_loopback_pair();
    std::array<char, 5> a{'h', 'e', 'l', 'l', 'o'};
    std::array<char, 6> b{' ', 'w', 'o', 'r', 'l', 'd'};
    const iovec out[2] = {{a.data(), a.size()}, {b.data(), b.size()}};
    boost::system::error_code ec;
    BOOST_TEST(ops.writev(client.get(), out, 2, ec) == 11u);
    BOOST_TEST(!ec);
    std::array<char, 3> x{};
    std::array<char, 8> y{};
    const iovec in[2] = {{x.data(), x.size()}, {y.data(), y.size()}};
    std::size_t got = 0;
    while (got < 11) {
        got += ops.readv(server.get(), in, 2, ec);
        BOOST_TEST_REQUIRE(!ec);
        BOOST_TEST_REQUIRE(got == 11u); // loopback delivers a small write whole
    }
    BOOST_TEST(std::string(x.data(), 3) + std::string(y.data(), 8) == "hello world");
}

BOOST_AUTO_TEST_CASE(poll_reports_readiness) {
    auto [client, server] = make_tcp_loopback_pair();
    pollfd fds[2] = {{server.get(), POLLIN, 0}, {client.get(), POLLOUT, 0}};
    boost::system::error_code ec;
    BOOST_TEST(ops.poll(fds, 2, poll_timeout::immediate, ec) == 1u);
    BOOST_TEST(fds[0].revents == 0);
    send_all(client.get(), pattern(10));
    BOOST_TEST(ops.poll(fds, 1, poll_timeout::infinite, ec) == 1u);
    BOOST_TEST((fds[0].revents & POLLIN) != 0);
}

BOOST_AUTO_TEST_CASE(a_nonblocking_recv_with_nothing_to_read_would_block) {
    auto [client, server] = make_tcp_loopback_pair();
    BOOST_TEST(!ops.set_nonblocking(server.get(), true));
    std::array<char, 4> buf{};
    boost::system::error_code ec;
    BOOST_TEST(ops.recv(server.get(), buf.data(), buf.size(), 0, ec) == 0u);
    BOOST_TEST((ec == boost::asio::error::would_block), ec.message());
}

BOOST_AUTO_TEST_CASE(orderly_shutdown_reads_as_eof) {
    auto [client, server] = make_tcp_loopback_pair();
    BOOST_TEST(!ops.shutdown(client.get(), SHUT_WR));
    std::array<char, 4> buf{};
    boost::system::error_code ec;
    BOOST_TEST(ops.recv(server.get(), buf.data(), buf.size(), 0, ec) == 0u);
    BOOST_TEST((ec == boost::asio::error::eof), ec.message());
    const iovec in[1] = {{buf.data(), buf.size()}};
    BOOST_TEST(ops.readv(server.get(), in, 1, ec) == 0u);
    BOOST_TEST((ec == boost::asio::error::eof), ec.message());
}

BOOST_AUTO_TEST_CASE(sending_to_a_closed_peer_is_an_error_not_sigpipe) {
    auto [client, server] = make_tcp_loopback_pair();
    BOOST_TEST(!server.reset());
    boost::system::error_code ec;
    const auto data = pattern(64 * 1024);
    for (int i = 0; i < 100 && !ec; ++i)
        ops.send(client.get(), data.data(), data.size(), 0, ec);
    BOOST_TEST((ec == boost::asio::error::broken_pipe || ec == boost::asio::error::connection_reset),
               ec.message());
}

BOOST_AUTO_TEST_CASE(connecting_to_a_closed_port_is_connection_refused) {
    boost::system::error_code ec;
    sockaddr_in addr{};
    socklen_t len = sizeof addr;
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    {
        // Take a free port, then release it so that nothing listens there.
        unique_socket probe(ops.open(AF_INET, SOCK_STREAM, 0, ec), ops);
        BOOST_TEST_REQUIRE(!ops.bind(probe.get(), reinterpret_cast<sockaddr*>(&addr), len));
        BOOST_TEST_REQUIRE(!ops.getsockname(probe.get(), reinterpret_cast<sockaddr*>(&addr), &len));
    }
    unique_socket s(ops.open(AF_INET, SOCK_STREAM, 0, ec), ops);
    BOOST_TEST((ops.connect(s.get(), reinterpret_cast<sockaddr*>(&addr), len) ==
                boost::asio::error::connection_refused));
}

BOOST_AUTO_TEST_CASE(calls_on_a_bad_descriptor_give_bad_descriptor) {
    std::array<char, 4> buf{};
    boost::system::error_code ec;
    BOOST_TEST((ops.close(1 << 20) == boost::asio::error::bad_descriptor));
    ops.recv(1 << 20, buf.data(), buf.size(), 0, ec);
    BOOST_TEST((ec == boost::asio::error::bad_descriptor));
    ops.send(1 << 20, buf.data(), buf.size(), 0, ec);
    BOOST_TEST((ec == boost::asio::error::bad_descriptor));
    BOOST_TEST((ops.listen(1 << 20, 1) == boost::asio::error::bad_descriptor));
    BOOST_TEST(ops.accept(1 << 20, nullptr, nullptr, ec) == -1);
    BOOST_TEST((ec == boost::asio::error::bad_descriptor));
}

BOOST_AUTO_TEST_CASE(socket_options_round_trip) {
    auto [client, server] = make_tcp_loopback_pair();
    const int on = 1;
    BOOST_TEST(!ops.setsockopt(client.get(), SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on));
    int value = 0;
    socklen_t len = sizeof value;
    BOOST_TEST(!ops.getsockopt(client.get(), SOL_SOCKET, SO_KEEPALIVE, &value, &len));
    BOOST_TEST(value == 1);
    sockaddr_storage peer{};
    socklen_t peer_len = sizeof peer;
    BOOST_TEST(!ops.getpeername(client.get(), reinterpret_cast<sockaddr*>(&peer), &peer_len));
    BOOST_TEST(peer.ss_family == AF_INET);
}

// Plain kernel sockets have no iomap: a socket that sets iomap_size moves to
// framed_tcp_ops, which has (framed_tcp_ops_test.cpp).
BOOST_AUTO_TEST_CASE(iomap_is_not_offered_by_plain_kernel_sockets) {
    auto [client, server] = make_tcp_loopback_pair();
    std::array<char, 64> buf{};
    boost::system::error_code ec;
    BOOST_TEST(ops.iomap(client.get(), buf.data(), buf.size(), PROT_WRITE, 0, ec) == -1);
    BOOST_TEST((ec == corio::error::not_supported_by_transport));
    BOOST_TEST(ops.iowrite(client.get(), buf.data(), 8, 0, {0, 64}, 0, ec) == 0u);
    BOOST_TEST((ec == corio::error::not_supported_by_transport));
    BOOST_TEST((ops.iounmap(client.get(), buf.data(), buf.size()) ==
                corio::error::not_supported_by_transport));
}
