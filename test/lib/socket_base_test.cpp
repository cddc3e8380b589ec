#define BOOST_TEST_MODULE socket_base
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <boost/asio/error.hpp>

#include <corio/detail/posix_socket_ops.hpp>
#include <corio/detail/unique_socket.hpp>
#include <corio/error.hpp>
#include <corio/socket_base.hpp>

#include "loopback_pair.hpp"

// The options on kernel TCP sockets, and against a fake ops table that records
// what reaches it. The same options on real rsockets are in
// socket_base_rdma_test.cpp.

using corio::socket_base;
using corio::detail::posix_socket_ops;
using corio::test::make_tcp_loopback_pair;
using namespace std::chrono_literals;

static_assert(!socket_base::send_buffer_size::rdma_only);
static_assert(!socket_base::receive_buffer_size::rdma_only);
static_assert(!socket_base::no_delay::rdma_only);
static_assert(!socket_base::reuse_address::rdma_only);
static_assert(!socket_base::keep_alive::rdma_only);
static_assert(socket_base::sq_size::rdma_only);
static_assert(socket_base::rq_size::rdma_only);
static_assert(socket_base::inline_size::rdma_only);
static_assert(socket_base::iomap_size::rdma_only);

static_assert(corio::socket_option<socket_base::send_buffer_size>);
static_assert(corio::socket_option<socket_base::receive_buffer_size>);
static_assert(corio::socket_option<socket_base::no_delay>);
static_assert(corio::socket_option<socket_base::reuse_address>);
static_assert(corio::socket_option<socket_base::keep_alive>);
static_assert(corio::socket_option<socket_base::sq_size>);
static_assert(corio::socket_option<socket_base::rq_size>);
static_assert(corio::socket_option<socket_base::inline_size>);
static_assert(corio::socket_option<socket_base::iomap_size>);
static_assert(corio::socket_option<socket_base::linger>);
static_assert(corio::socket_option<socket_base::oob_inline>);
static_assert(corio::socket_option<socket_base::max_segment>);
static_assert(corio::socket_option<socket_base::v6_only>);
static_assert(corio::socket_option<socket_base::rdma_route>);
static_assert(socket_base::rdma_route::rdma_only);
static_assert(!socket_base::v6_only::rdma_only);
static_assert(!corio::socket_option<int>);
static_assert(!corio::socket_option<socket_base>);

// What rsockets store for RDMA_IOMAPSIZE (rsocket.c, rsetsockopt: a value
// scaled into one byte and back).
static_assert(socket_base::iomap_size::rounded(0) == 0);
static_assert(socket_base::iomap_size::rounded(1) == 1);
static_assert(socket_base::iomap_size::rounded(128) == 128);
static_assert(socket_base::iomap_size::rounded(129) == 128);
static_assert(socket_base::iomap_size::rounded(200) == 128);
static_assert(socket_base::iomap_size::rounded(255) == 128);
static_assert(socket_base::iomap_size::rounded(256) == 256);
static_assert(socket_base::iomap_size::rounded(300) == 256);
static_assert(socket_base::iomap_size::rounded(32511) == 32256);
static_assert(socket_base::iomap_size::rounded(32512) == 32512);

// Values go in explicitly, as with Asio's options.
static_assert(!std::is_convertible_v<socket_base::no_delay, bool>);
static_assert(!std::is_convertible_v<int, socket_base::sq_size>);

// The three queue sizes are one class template, and still three types: one
// cannot be handed where another is meant.
static_assert(!std::is_same_v<socket_base::sq_size, socket_base::rq_size>);
static_assert(!std::is_same_v<socket_base::sq_size, socket_base::inline_size>);
static_assert(!std::is_same_v<socket_base::rq_size, socket_base::inline_size>);
static_assert(!std::is_convertible_v<socket_base::sq_size, socket_base::rq_size>);

namespace {

const auto& ops = posix_socket_ops;

int raw_int(int fd, int level, int name) {
    int value = 0;
    socklen_t len = sizeof value;
    BOOST_TEST_REQUIRE(!ops.getsockopt(fd, level, name, &value, &len));
    return value;
}

/// One setsockopt or getsockopt that reached the fake table.
struct recorded_call {
    bool set;
    int level;
    int name;
    socklen_t length;
    unsigned char bytes[sizeof(int)];
};

std::vector<recorded_call> calls;
int fake_errno = 0;
int fake_get_value = 0;
socklen_t fake_get_length = sizeof(int);

boost::system::error_code fake_setsockopt(int, int level, int name, const void* value,
                                          socklen_t len) {
    recorded_call call{true, level, name, len, {}};
    std::memcpy(call.bytes, value, len < sizeof call.bytes ? len : sizeof call.bytes);
    calls.push_back(call);
    return {fake_errno, boost::system::system_category()};
}

boost::system::error_code fake_getsockopt(int, int level, int name, void* value, socklen_t* len) {
    calls.push_back({false, level, name, *len, {}});
    if (fake_errno)
        return {fake_errno, boost::system::system_category()};
    std::memcpy(value, &fake_get_value, sizeof fake_get_value);
    *len = fake_get_length;
    return {};
}

/// A transport whose only calls are the two option calls, which record what
/// reaches them and answer as the test says.
struct fake_transport {
    corio::detail::socket_ops table{};

    fake_transport() {
        table.name = "fake";
        table.setsockopt = fake_setsockopt;
        table.getsockopt = fake_getsockopt;
        calls.clear();
        fake_errno = 0;
        fake_get_value = 0;
        fake_get_length = sizeof(int);
    }
};

template <class Option>
void check_refused_before_any_call(const Option& option) {
    fake_transport fake;
    const auto ec = option.apply(fake.table, 3);
    BOOST_TEST((ec == boost::asio::error::invalid_argument), ec.message());
    BOOST_TEST(calls.empty());
}

} // namespace

BOOST_AUTO_TEST_CASE(buffer_sizes_round_trip_at_least_as_requested) {
    auto [client, server] = make_tcp_loopback_pair();
    // The kernel doubles the value, then clamps to net.core.[rw]mem_max,
    // which is never below 64 KiB.
    BOOST_TEST_REQUIRE(!socket_base::send_buffer_size(32768).apply(ops, client.get()));
    socket_base::send_buffer_size send;
    BOOST_TEST_REQUIRE(!send.query(ops, client.get()));
    BOOST_TEST(send.value() >= 32768);
    BOOST_TEST(send.value() == raw_int(client.get(), SOL_SOCKET, SO_SNDBUF));

    BOOST_TEST_REQUIRE(!socket_base::receive_buffer_size(32768).apply(ops, server.get()));
    socket_base::receive_buffer_size receive;
    BOOST_TEST_REQUIRE(!receive.query(ops, server.get()));
    BOOST_TEST(receive.value() >= 32768);
    BOOST_TEST(receive.value() == raw_int(server.get(), SOL_SOCKET, SO_RCVBUF));
}

BOOST_AUTO_TEST_CASE(no_delay_round_trips) {
    auto [client, server] = make_tcp_loopback_pair();
    BOOST_TEST_REQUIRE(!socket_base::no_delay(true).apply(ops, client.get()));
    socket_base::no_delay option;
    BOOST_TEST_REQUIRE(!option.query(ops, client.get()));
    BOOST_TEST(option.value());
    BOOST_TEST(static_cast<bool>(option));
    BOOST_TEST(raw_int(client.get(), IPPROTO_TCP, TCP_NODELAY) != 0);

    BOOST_TEST_REQUIRE(!socket_base::no_delay(false).apply(ops, client.get()));
    BOOST_TEST_REQUIRE(!option.query(ops, client.get()));
    BOOST_TEST(!option);
}

BOOST_AUTO_TEST_CASE(reuse_address_round_trips) {
    auto [client, server] = make_tcp_loopback_pair();
    BOOST_TEST_REQUIRE(!socket_base::reuse_address(true).apply(ops, server.get()));
    socket_base::reuse_address option;
    BOOST_TEST_REQUIRE(!option.query(ops, server.get()));
    BOOST_TEST(option.value());
    BOOST_TEST(raw_int(server.get(), SOL_SOCKET, SO_REUSEADDR) != 0);

    BOOST_TEST_REQUIRE(!socket_base::reuse_address(false).apply(ops, server.get()));
    BOOST_TEST_REQUIRE(!option.query(ops, server.get()));
    BOOST_TEST(!option.value());
}

BOOST_AUTO_TEST_CASE(keep_alive_sets_the_idle_time_through_tcp_keepidle) {
    auto [client, server] = make_tcp_loopback_pair();
    BOOST_TEST_REQUIRE(!socket_base::keep_alive(true, 42s).apply(ops, client.get()));
    BOOST_TEST(raw_int(client.get(), SOL_SOCKET, SO_KEEPALIVE) != 0);
    BOOST_TEST(raw_int(client.get(), IPPROTO_TCP, TCP_KEEPIDLE) == 42);
    socket_base::keep_alive option;
    BOOST_TEST_REQUIRE(!option.query(ops, client.get()));
    BOOST_TEST(option.value());
    BOOST_TEST(option.idle().count() == 42);

    // Off, with no idle time given: the idle time stays as it was.
    BOOST_TEST_REQUIRE(!socket_base::keep_alive(false).apply(ops, client.get()));
    BOOST_TEST_REQUIRE(!option.query(ops, client.get()));
    BOOST_TEST(!option);
    BOOST_TEST(option.idle().count() == 42);

    BOOST_TEST_REQUIRE(!socket_base::keep_alive(true, socket_base::keep_alive::max_idle)
                            .apply(ops, client.get()));
    BOOST_TEST(raw_int(client.get(), IPPROTO_TCP, TCP_KEEPIDLE) == 32767);
}

BOOST_AUTO_TEST_CASE(keep_alive_sets_the_idle_time_before_turning_probes_on) {
    fake_transport fake;
    BOOST_TEST_REQUIRE(!socket_base::keep_alive(true, 7s).apply(fake.table, 3));
    BOOST_TEST_REQUIRE(calls.size() == 2u);
    BOOST_TEST(calls[0].level == IPPROTO_TCP);
    BOOST_TEST(calls[0].name == TCP_KEEPIDLE);
    BOOST_TEST(calls[1].level == SOL_SOCKET);
    BOOST_TEST(calls[1].name == SO_KEEPALIVE);

    // A failed idle time leaves keep-alive as it was.
    calls.clear();
    fake_errno = EINVAL;
    BOOST_TEST((socket_base::keep_alive(true, 7s).apply(fake.table, 3) ==
                boost::asio::error::invalid_argument));
    BOOST_TEST(calls.size() == 1u);

    calls.clear();
    fake_errno = 0;
    BOOST_TEST_REQUIRE(!socket_base::keep_alive(true).apply(fake.table, 3));
    BOOST_TEST_REQUIRE(calls.size() == 1u);
    BOOST_TEST(calls[0].name == SO_KEEPALIVE);
}

BOOST_AUTO_TEST_CASE(invalid_values_never_reach_the_socket) {
    constexpr int int_max = std::numeric_limits<int>::max();
    check_refused_before_any_call(socket_base::send_buffer_size(-1));
    check_refused_before_any_call(socket_base::send_buffer_size(0));
    check_refused_before_any_call(socket_base::send_buffer_size(int_max / 2 + 1));
    check_refused_before_any_call(socket_base::send_buffer_size(int_max));
    check_refused_before_any_call(socket_base::receive_buffer_size(-4096));
    check_refused_before_any_call(socket_base::receive_buffer_size(0));
    check_refused_before_any_call(socket_base::receive_buffer_size(int_max));
    check_refused_before_any_call(socket_base::keep_alive(true, -1s));
    check_refused_before_any_call(socket_base::keep_alive(false, -1s));
    check_refused_before_any_call(socket_base::keep_alive(true, 32768s));
    check_refused_before_any_call(socket_base::keep_alive(true, std::chrono::seconds(1LL << 40)));
    check_refused_before_any_call(socket_base::sq_size(-1));
    check_refused_before_any_call(socket_base::sq_size(0xffff));
    check_refused_before_any_call(socket_base::rq_size(-1));
    check_refused_before_any_call(socket_base::rq_size(0x10000));
    check_refused_before_any_call(socket_base::inline_size(-1));
    check_refused_before_any_call(socket_base::inline_size(int_max));
    check_refused_before_any_call(socket_base::iomap_size(-1));
    check_refused_before_any_call(socket_base::iomap_size(32513));
    // 32768 would wrap around in rsockets' one-byte scale and come back as 128.
    check_refused_before_any_call(socket_base::iomap_size(32768));
}

BOOST_AUTO_TEST_CASE(a_refused_value_leaves_the_kernel_socket_as_it_was) {
    auto [client, server] = make_tcp_loopback_pair();
    const int before = raw_int(client.get(), SOL_SOCKET, SO_SNDBUF);
    BOOST_TEST((socket_base::send_buffer_size(-1).apply(ops, client.get()) ==
                boost::asio::error::invalid_argument));
    BOOST_TEST(raw_int(client.get(), SOL_SOCKET, SO_SNDBUF) == before);
}

BOOST_AUTO_TEST_CASE(limits_are_accepted) {
    fake_transport fake;
    BOOST_TEST(!socket_base::send_buffer_size(1).apply(fake.table, 3));
    BOOST_TEST(!socket_base::send_buffer_size(socket_base::send_buffer_size::max_value)
                    .apply(fake.table, 3));
    BOOST_TEST(!socket_base::sq_size(0).apply(fake.table, 3));
    BOOST_TEST(!socket_base::sq_size(0xfffe).apply(fake.table, 3));
    BOOST_TEST(!socket_base::iomap_size(0).apply(fake.table, 3));
    BOOST_TEST(!socket_base::iomap_size(32512).apply(fake.table, 3));
    BOOST_TEST(calls.size() == 6u);
}

BOOST_AUTO_TEST_CASE(rdma_options_on_a_kernel_socket_are_not_supported_by_the_transport) {
    auto [client, server] = make_tcp_loopback_pair();
    const int fd = client.get();
    const auto expect = [](const boost::system::error_code& ec) {
        BOOST_TEST((ec == corio::error::not_supported_by_transport), ec.message());
    };
    expect(socket_base::sq_size(64).apply(ops, fd));
    expect(socket_base::rq_size(64).apply(ops, fd));
    expect(socket_base::inline_size(64).apply(ops, fd));

    socket_base::sq_size sq(5);
    expect(sq.query(ops, fd));
    BOOST_TEST(sq.value() == 5); // a failed query leaves the value alone
    socket_base::rq_size rq;
    expect(rq.query(ops, fd));
    socket_base::inline_size in;
    expect(in.query(ops, fd));
}

// iomap_size is the RDMA option the tcp transport keeps: above zero it turns
// on the framed emulation of riomap/riowrite, doc/tcp-transport.md.
BOOST_AUTO_TEST_CASE(iomap_size_on_a_kernel_socket_is_recorded_before_connect_only) {
    boost::system::error_code ec;
    corio::detail::unique_socket fresh(ops.open(AF_INET, SOCK_STREAM, 0, ec), ops);
    BOOST_TEST_REQUIRE(!ec);
    socket_base::iomap_size iomap(7);
    BOOST_TEST(!iomap.query(ops, fresh.get()));
    BOOST_TEST(iomap.value() == 0);
    BOOST_TEST(!socket_base::iomap_size(300).apply(ops, fresh.get()));
    BOOST_TEST(!iomap.query(ops, fresh.get()));
    BOOST_TEST(iomap.value() == socket_base::iomap_size::rounded(300));

    auto [client, server] = make_tcp_loopback_pair();
    BOOST_TEST((socket_base::iomap_size(1).apply(ops, client.get()) ==
                corio::error::option_after_connect));
    BOOST_TEST(!iomap.query(ops, client.get()));
    BOOST_TEST(iomap.value() == 0);
}

BOOST_AUTO_TEST_CASE(rdma_options_reach_sol_rdma_in_the_types_rsockets_read) {
    fake_transport fake;
    BOOST_TEST_REQUIRE(!socket_base::sq_size(100).apply(fake.table, 3));
    BOOST_TEST_REQUIRE(!socket_base::rq_size(200).apply(fake.table, 3));
    BOOST_TEST_REQUIRE(!socket_base::inline_size(300).apply(fake.table, 3));
    BOOST_TEST_REQUIRE(!socket_base::iomap_size(400).apply(fake.table, 3));
    BOOST_TEST_REQUIRE(calls.size() == 4u);
    const int expected[] = {100, 200, 300, 400};
    for (int i = 0; i < 4; ++i) {
        BOOST_TEST(calls[i].level == 0x10000); // SOL_RDMA
        BOOST_TEST(calls[i].name == i);        // RDMA_SQSIZE .. RDMA_IOMAPSIZE
        BOOST_TEST(calls[i].length == 4u);
        int value = 0;
        std::memcpy(&value, calls[i].bytes, sizeof value);
        BOOST_TEST(value == expected[i]);
    }

    fake_get_value = 384;
    socket_base::rq_size rq;
    BOOST_TEST_REQUIRE(!rq.query(fake.table, 3));
    BOOST_TEST(rq.value() == 384);
    BOOST_TEST(calls.back().level == 0x10000);
    BOOST_TEST(calls.back().name == 1);
}

BOOST_AUTO_TEST_CASE(rsockets_refusal_once_connecting_is_option_after_connect) {
    // rsocket.c answers EINVAL to every SOL_RDMA option once the socket has
    // started to connect; corio has refused every value rsockets would reject.
    fake_transport fake;
    fake_errno = EINVAL;
    const auto expect = [](const boost::system::error_code& ec) {
        BOOST_TEST((ec == corio::error::option_after_connect), ec.message());
    };
    expect(socket_base::sq_size(64).apply(fake.table, 3));
    expect(socket_base::rq_size(64).apply(fake.table, 3));
    expect(socket_base::inline_size(64).apply(fake.table, 3));
    expect(socket_base::iomap_size(64).apply(fake.table, 3));
    // The common options keep the transport's own answer.
    BOOST_TEST((socket_base::no_delay(true).apply(fake.table, 3) ==
                boost::asio::error::invalid_argument));
}

BOOST_AUTO_TEST_CASE(a_query_answered_in_the_wrong_size_is_an_error) {
    fake_transport fake;
    fake_get_value = 1;
    fake_get_length = 1;
    socket_base::no_delay option;
    BOOST_TEST((option.query(fake.table, 3) == boost::asio::error::invalid_argument));
    BOOST_TEST(!option.value());
}

BOOST_AUTO_TEST_CASE(a_bad_descriptor_is_reported_as_such) {
    BOOST_TEST((socket_base::no_delay(true).apply(ops, 1 << 20) ==
                boost::asio::error::bad_descriptor));
    socket_base::keep_alive option;
    BOOST_TEST((option.query(ops, 1 << 20) == boost::asio::error::bad_descriptor));
}

// The options the rsocket man page lists beyond the first ones, on the kernel transport.

BOOST_AUTO_TEST_CASE(linger_round_trips_and_refuses_a_bad_timeout) {
    auto [client, server] = make_tcp_loopback_pair();
    socket_base::linger option;
    BOOST_TEST_REQUIRE(!option.query(ops, client.get()));
    BOOST_TEST(!option.enabled()); // the kernel's default
    BOOST_TEST_REQUIRE(!socket_base::linger(true, 7).apply(ops, client.get()));
    BOOST_TEST_REQUIRE(!option.query(ops, client.get()));
    BOOST_TEST(option.enabled());
    BOOST_TEST(option.timeout() == 7);
    BOOST_TEST((socket_base::linger(true, -1).apply(ops, client.get()) ==
                boost::asio::error::invalid_argument));
    BOOST_TEST((socket_base::linger(true, socket_base::linger::max_timeout + 1)
                    .apply(ops, client.get()) == boost::asio::error::invalid_argument));
    BOOST_TEST_REQUIRE(!option.query(ops, client.get()));
    BOOST_TEST(option.timeout() == 7);
}

BOOST_AUTO_TEST_CASE(oob_inline_and_v6_only_round_trip) {
    auto [client, server] = make_tcp_loopback_pair();
    BOOST_TEST_REQUIRE(!socket_base::oob_inline(true).apply(ops, client.get()));
    socket_base::oob_inline oob;
    BOOST_TEST_REQUIRE(!oob.query(ops, client.get()));
    BOOST_TEST(oob.value());
    BOOST_TEST(raw_int(client.get(), SOL_SOCKET, SO_OOBINLINE) != 0);

    boost::system::error_code ec;
    corio::detail::unique_socket v6(ops.open(AF_INET6, SOCK_STREAM, 0, ec), ops);
    BOOST_TEST_REQUIRE(!ec, ec.message());
    BOOST_TEST_REQUIRE(!socket_base::v6_only(true).apply(ops, v6.get()));
    socket_base::v6_only only;
    BOOST_TEST_REQUIRE(!only.query(ops, v6.get()));
    BOOST_TEST(only.value());
    BOOST_TEST_REQUIRE(!socket_base::v6_only(false).apply(ops, v6.get()));
    BOOST_TEST_REQUIRE(!only.query(ops, v6.get()));
    BOOST_TEST(!only);
    // An IPv4 socket has no IPV6_V6ONLY: the kernel's error, unchanged.
    BOOST_TEST(socket_base::v6_only(true).apply(ops, client.get()).failed());
}

BOOST_AUTO_TEST_CASE(max_segment_is_honoured_before_connect_and_bounded) {
    boost::system::error_code ec;
    corio::detail::unique_socket s(ops.open(AF_INET, SOCK_STREAM, 0, ec), ops);
    BOOST_TEST_REQUIRE(!ec, ec.message());
    BOOST_TEST_REQUIRE(!socket_base::max_segment(1000).apply(ops, s.get()));
    socket_base::max_segment option;
    BOOST_TEST_REQUIRE(!option.query(ops, s.get()));
    BOOST_TEST(option.value() == 1000);
    BOOST_TEST((socket_base::max_segment(socket_base::max_segment::min_value - 1)
                    .apply(ops, s.get()) == boost::asio::error::invalid_argument));
    BOOST_TEST((socket_base::max_segment(socket_base::max_segment::max_value + 1)
                    .apply(ops, s.get()) == boost::asio::error::invalid_argument));
}

BOOST_AUTO_TEST_CASE(rdma_route_is_validated_then_not_supported_on_a_kernel_socket) {
    auto [client, server] = make_tcp_loopback_pair();
    ibv_path_data record{};
    // Not the record rdma_cm looks for: refused before any call.
    BOOST_TEST((socket_base::rdma_route(std::span(&record, 1)).apply(ops, client.get()) ==
                boost::asio::error::invalid_argument));
    BOOST_TEST((socket_base::rdma_route().apply(ops, client.get()) ==
                boost::asio::error::invalid_argument));
    record.flags = IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY | IBV_PATH_FLAG_BIDIRECTIONAL;
    record.reserved = 1;
    BOOST_TEST((socket_base::rdma_route(std::span(&record, 1)).apply(ops, client.get()) ==
                boost::asio::error::invalid_argument));
    std::vector<ibv_path_data> many(socket_base::rdma_route::max_paths + 1, record);
    for (auto& r : many)
        r.reserved = 0;
    BOOST_TEST((socket_base::rdma_route(many).apply(ops, client.get()) ==
                boost::asio::error::invalid_argument));
    record.reserved = 0;
    const socket_base::rdma_route route(std::span(&record, 1));
    BOOST_TEST(route.paths().size() == 1u);
    BOOST_TEST((route.apply(ops, client.get()) == corio::error::not_supported_by_transport));
    socket_base::rdma_route read_back;
    BOOST_TEST((read_back.query(ops, client.get()) == corio::error::not_supported_by_transport));
    // Before connect a query is refused: v44 would overwrite a route set.
    boost::system::error_code ec;
    corio::detail::unique_socket fresh(ops.open(AF_INET, SOCK_STREAM, 0, ec), ops);
    BOOST_TEST_REQUIRE(!ec, ec.message());
    BOOST_TEST((read_back.query(ops, fresh.get()) == boost::asio::error::not_connected));
}
