#pragma once

#include <optional>
#include <string>
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/test/unit_test.hpp>

#include <corio/acceptor.hpp>
#include <corio/poll_mode.hpp>
#include <corio/stream.hpp>
#include <corio/transport.hpp>

namespace corio::test {

/// The transport a parameterised test runs on: CORIO_TEST_TRANSPORT=rsocket
/// or tcp (the default). test/meson.build declares each such test twice, a
/// tcp run in the lib suite and an rsocket run in the rdma suite.
corio::transport transport_under_test();

/// The poll mode a parameterised test runs in: CORIO_TEST_POLL_MODE=busy or
/// thread (the default).
corio::poll_mode poll_mode_under_test();

/// The address family a parameterised test runs over: CORIO_TEST_FAMILY=ipv6
/// or ipv4 (the default).
bool ipv6_under_test();

/// Where to listen: 127.0.0.1 (::1 over IPv6) for tcp; for rsocket an
/// address of an RDMA device's netdev, which guest-run exports:
/// CORIO_RDMA_ADDR, or CORIO_RDMA_ADDR6 over IPv6.
boost::asio::ip::address address_under_test();

/// An endpoint on address_under_test() with a port the system picks.
inline boost::asio::ip::tcp::endpoint any_port_endpoint() { return {address_under_test(), 0}; }

/// For corio::test::skip_if: a reason to skip a case that checks what only
/// the tcp transport does, when the transport under test is rsocket.
std::optional<std::string> tcp_only();

/// A global fixture: for the rsocket transport without an RDMA device, it
/// prints the reason and exits 77 (SKIP).
struct transport_available {
    transport_available();
};

/// A connected pair of streams on the transport under test:
/// first the client, second the server side.
boost::asio::awaitable<std::pair<corio::stream, corio::stream>> make_stream_pair();

/// A connected pair of kernel TCP streams on 127.0.0.1, whatever the
/// transport under test: first the client, second the server side.
boost::asio::awaitable<std::pair<corio::stream, corio::stream>> make_tcp_stream_pair();

/// As make_stream_pair, with corio::socket_base::iomap_size set to
/// `iomap_size` on the client before connect and on the acceptor before
/// listen: each side may hold that many PROT_WRITE mappings, and on tcp the
/// framed emulation of riowrite is on (doc/tcp-transport.md).
boost::asio::awaitable<std::pair<corio::stream, corio::stream>>
make_mappable_stream_pair(int iomap_size = 1);

} // namespace corio::test

#define CORIO_TEST_TRANSPORT_FIXTURE()                                                             \
    using corio_transport_available = ::corio::test::transport_available;                          \
    BOOST_TEST_GLOBAL_FIXTURE(corio_transport_available)
