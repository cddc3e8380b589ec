#define BOOST_TEST_MODULE iomap_registration
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include <sys/mman.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <corio/acceptor.hpp>
#include <corio/error.hpp>
#include <corio/iomap_registration.hpp>
#include <corio/socket_base.hpp>
#include <corio/stream.hpp>

#include "coroutine_test.hpp"
#include "primed_rsocket_services.hpp"
#include "skip_if.hpp"
#include "transport_under_test.hpp"

CORIO_TEST_PRIMED_TRANSPORT_FIXTURE();

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using boost::system::error_code;

namespace {

bool on_rsockets() { return corio::test::transport_under_test() == corio::transport::rsocket; }

/// A pair whose sockets may each hold one PROT_WRITE mapping: the option is
/// set on the client before connect and on the acceptor before listen. On
/// tcp it turns on the framed emulation (doc/tcp-transport.md).
asio::awaitable<std::pair<corio::stream, corio::stream>> make_mappable_pair() {
    auto executor = co_await asio::this_coro::executor;
    const auto transport = corio::test::transport_under_test();
    corio::acceptor acceptor(executor);
    acceptor.open(transport);
    corio::stream client(executor);
    client.open(transport);
    acceptor.set_option(corio::socket_base::iomap_size(1));
    client.set_option(corio::socket_base::iomap_size(1));
    acceptor.bind(corio::test::any_port_endpoint());
    acceptor.listen();
    corio::stream server = co_await (acceptor.async_accept(asio::use_awaitable) &&
                                     client.async_connect(acceptor.local_endpoint(),
                                                          asio::use_awaitable));
    co_return std::pair(std::move(client), std::move(server));
}

std::vector<unsigned char> pattern(std::size_t n) {
    std::vector<unsigned char> v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = static_cast<unsigned char>(i * 13 + 7);
    return v;
}

} // namespace

CORIO_COROUTINE_TEST_CASE(a_stream_without_iomap_size_has_no_iomap_on_tcp, *corio::test::skip_if(corio::test::tcp_only)) {
    auto [client, server] = co_await corio::test::make_stream_pair();
    std::array<unsigned char, 64> region{};
    error_code ec;
    corio::iomap_registration failed(server, asio::buffer(region), PROT_WRITE, 0, ec);
    BOOST_TEST((ec == corio::error::not_supported_by_transport), ec.message());
    BOOST_TEST(!failed.is_mapped());
    client.add_remote_mapping(0, region.size());
    auto [wec, n] = co_await client.async_iowrite(asio::buffer(region), 0,
                                                  asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((wec == corio::error::not_supported_by_transport), wec.message());
}

CORIO_COROUTINE_TEST_CASE(iowrite_then_notify_delivers_exactly_the_written_bytes) {
    auto [client, server] = co_await make_mappable_pair();
    constexpr std::size_t window = 8192;
    std::vector<unsigned char> memory(3 * window, 0xee);
    unsigned char* mapped = memory.data() + window;
    std::fill_n(mapped, window, 0);
    corio::iomap_registration registration(server, asio::buffer(mapped, window));
    BOOST_TEST(registration.is_mapped());
    BOOST_TEST(registration.offset() == 0);
    BOOST_TEST(registration.size() == window);

    // The mapping reaches the peer with the server's next send.
    co_await asio::async_write(server, asio::buffer("m", 1), asio::use_awaitable);
    std::array<char, 1> hello{};
    co_await asio::async_read(client, asio::buffer(hello), asio::use_awaitable);
    client.add_remote_mapping(registration.offset(), window);

    const auto data = pattern(5000);
    const auto n = co_await client.async_iowrite(asio::buffer(data), 1000, asio::use_awaitable);
    BOOST_TEST(n == data.size());
    co_await asio::async_write(client, asio::buffer("n", 1), asio::use_awaitable);
    co_await asio::async_read(server, asio::buffer(hello), asio::use_awaitable);
    BOOST_TEST(std::equal(data.begin(), data.end(), mapped + 1000));
    BOOST_TEST(std::all_of(mapped, mapped + 1000, [](unsigned char b) { return b == 0; }));
    BOOST_TEST(std::all_of(mapped + 6000, mapped + window, [](unsigned char b) { return b == 0; }));
    BOOST_TEST(std::all_of(memory.begin(), memory.begin() + window,
                           [](unsigned char b) { return b == 0xee; }));
    BOOST_TEST(std::all_of(memory.end() - window, memory.end(),
                           [](unsigned char b) { return b == 0xee; }));
}

CORIO_COROUTINE_TEST_CASE(iowrite_blocking_and_try_first_deliver_the_written_bytes) {
    auto [client, server] = co_await make_mappable_pair();
    constexpr std::size_t window = 8192;
    std::vector<unsigned char> mapped(window, 0);
    corio::iomap_registration registration(server, asio::buffer(mapped));
    co_await asio::async_write(server, asio::buffer("m", 1), asio::use_awaitable);
    std::array<char, 1> note{};
    co_await asio::async_read(client, asio::buffer(note), asio::use_awaitable);
    client.add_remote_mapping(registration.offset(), window);

    // Blocking: all of it in one call.
    const auto data = pattern(3000);
    BOOST_TEST(client.iowrite(asio::buffer(data), 0) == data.size());
    // Non-blocking: each call writes what fits; would_block only with nothing
    // written, and then the stream's async_wait(wait_write) says when to go on.
    client.non_blocking(true);
    std::size_t done = 0;
    for (int tries = 0; tries < 100000 && done < data.size(); ++tries) {
        error_code ec;
        const std::size_t n =
            client.iowrite(asio::buffer(data.data() + done, data.size() - done),
                           static_cast<off_t>(4000 + done), ec);
        done += n;
        if (ec == asio::error::would_block) {
            BOOST_TEST_REQUIRE(n == 0u); // a part written is reported as written
            co_await client.async_wait(corio::stream::wait_write, asio::use_awaitable);
        } else {
            BOOST_TEST_REQUIRE(!ec, ec.message());
        }
    }
    BOOST_TEST(done == data.size());
    error_code ec;
    BOOST_TEST(client.iowrite(asio::buffer(data), static_cast<off_t>(window), ec) == 0u);
    BOOST_TEST((ec == corio::error::no_remote_mapping), ec.message());

    co_await asio::async_write(client, asio::buffer("n", 1), asio::use_awaitable);
    co_await asio::async_read(server, asio::buffer(note), asio::use_awaitable);
    BOOST_TEST(std::equal(data.begin(), data.end(), mapped.begin()));
    BOOST_TEST(std::equal(data.begin(), data.end(), mapped.begin() + 4000));
    BOOST_TEST(std::all_of(mapped.begin() + 3000, mapped.begin() + 4000,
                           [](unsigned char b) { return b == 0; }));
}

CORIO_COROUTINE_TEST_CASE(iowrites_outside_known_mappings_are_refused) {
    auto [client, server] = co_await make_mappable_pair();
    std::array<unsigned char, 256> data{};
    // Nothing declared: refused before any call, on either transport.
    auto [ec, n] = co_await client.async_iowrite(asio::buffer(data), 0,
                                                 asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((ec == corio::error::no_remote_mapping), ec.message());
    BOOST_TEST(n == 0u);

    std::vector<unsigned char> region(4096);
    corio::iomap_registration registration(server, asio::buffer(region));
    co_await asio::async_write(server, asio::buffer("m", 1), asio::use_awaitable);
    std::array<char, 1> hello{};
    co_await asio::async_read(client, asio::buffer(hello), asio::use_awaitable);
    client.add_remote_mapping(0, region.size());

    // Crossing the end of the mapping: refused (v44 would loop forever).
    std::tie(ec, n) = co_await client.async_iowrite(asio::buffer(data), 4000,
                                                    asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((ec == corio::error::iowrite_out_of_bounds), ec.message());
    // Exactly up to the end is fine.
    std::tie(ec, n) = co_await client.async_iowrite(asio::buffer(data), 4096 - 256,
                                                    asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(!ec, ec.message());
    BOOST_TEST(n == 256u);

    // Declared by the application but never mapped by the peer.
    client.add_remote_mapping(1 << 20, 4096);
    std::tie(ec, n) = co_await client.async_iowrite(asio::buffer(data), 1 << 20,
                                                    asio::as_tuple(asio::use_awaitable));
    if (on_rsockets()) {
        // rdma-core's silent 0 becomes an error at the sender.
        BOOST_TEST((ec == corio::error::no_remote_mapping), ec.message());
        co_return;
    }
    // On tcp the sender cannot know; the receiver refuses the frame, writes
    // none of it, and ends the connection.
    BOOST_TEST(!ec, ec.message());
    std::fill(region.begin(), region.end(), 0);
    auto [rec, rn] = co_await server.async_read_some(asio::buffer(hello),
                                                     asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((rec == corio::error::protocol_error), rec.message());
    BOOST_TEST(std::all_of(region.begin(), region.end(), [](unsigned char b) { return b == 0; }));
    std::tie(rec, rn) = co_await client.async_read_some(asio::buffer(hello),
                                                        asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((rec == asio::error::eof), rec.message());
}

CORIO_COROUTINE_TEST_CASE(registration_lifetime) {
    auto [client, server] = co_await make_mappable_pair();
    std::vector<unsigned char> region(4096);
    corio::iomap_registration first(server, asio::buffer(region));
    BOOST_TEST(first.is_mapped());
    corio::iomap_registration moved = std::move(first);
    BOOST_TEST(!first.is_mapped());
    BOOST_TEST(moved.is_mapped());
    BOOST_TEST(!moved.reset());
    BOOST_TEST(!moved.is_mapped());
    BOOST_TEST(!moved.reset());
    // A registration that outlives its stream's socket unmaps quietly.
    corio::iomap_registration late(server, asio::buffer(region));
    server.close();
    BOOST_TEST(!late.reset());
    // Mapping on a closed stream: bad_descriptor.
    error_code ec;
    corio::iomap_registration none(server, asio::buffer(region), PROT_WRITE, 0, ec);
    BOOST_TEST((ec == asio::error::bad_descriptor), ec.message());
}

CORIO_COROUTINE_TEST_CASE(offset_minus_one_lets_the_transport_choose_the_buffer_address) {
    auto [client, server] = co_await make_mappable_pair();
    std::vector<unsigned char> region(8192, 0);
    corio::iomap_registration registration(server, asio::buffer(region), PROT_WRITE, -1);
    BOOST_TEST_REQUIRE(registration.is_mapped());
    // v44 (and the tcp emulation) choose the region's own address.
    BOOST_TEST(registration.offset() == static_cast<off_t>(reinterpret_cast<std::uintptr_t>(region.data())));
    co_await asio::async_write(server, asio::buffer("m", 1), asio::use_awaitable);
    std::array<char, 1> hello{};
    co_await asio::async_read(client, asio::buffer(hello), asio::use_awaitable);
    client.add_remote_mapping(registration.offset(), region.size());

    const auto data = pattern(1000);
    BOOST_TEST(co_await client.async_iowrite(asio::buffer(data), registration.offset() + 100,
                                             asio::use_awaitable) == data.size());
    co_await asio::async_write(client, asio::buffer("n", 1), asio::use_awaitable);
    co_await asio::async_read(server, asio::buffer(hello), asio::use_awaitable);
    BOOST_TEST(std::equal(data.begin(), data.end(), region.begin() + 100));
    BOOST_TEST(std::all_of(region.begin(), region.begin() + 100, [](unsigned char b) { return b == 0; }));
}

CORIO_COROUTINE_TEST_CASE(a_writable_mapping_past_iomap_size_is_refused_by_name) {
    auto [client, server] = co_await make_mappable_pair();
    std::vector<unsigned char> first(4096, 0);
    std::vector<unsigned char> second(4096, 0);
    corio::iomap_registration taken(server, asio::buffer(first), PROT_WRITE, 0);
    BOOST_TEST_REQUIRE(taken.is_mapped());
    // iomap_size's one slot is taken: on rsockets in the table the peer
    // offered, on tcp in this side's own. rdma-core says only ENOMEM, which
    // would read as memory it cannot pin.
    error_code ec;
    corio::iomap_registration refused(server, asio::buffer(second), PROT_WRITE, 8192, ec);
    BOOST_TEST((ec == corio::error::iomap_slots_exhausted), ec.message());
    BOOST_TEST(!refused.is_mapped());
    // A local-only mapping needs no slot.
    corio::iomap_registration local(server, asio::buffer(second), PROT_NONE, 8192, ec);
    BOOST_TEST(!ec, ec.message());
    BOOST_TEST(local.is_mapped());
    if (on_rsockets()) {
        // A peer that set no iomap_size (rstream does not) offers no slot at
        // all. (On tcp such a stream has no iomap: the case above.)
        auto [plain_client, plain_server] = co_await corio::test::make_stream_pair();
        corio::iomap_registration none(plain_server, asio::buffer(first), PROT_WRITE, 0, ec);
        BOOST_TEST((ec == corio::error::iomap_slots_exhausted), ec.message());
        BOOST_TEST(!none.is_mapped());
    }
}

CORIO_COROUTINE_TEST_CASE(prot_none_registers_locally_and_takes_no_peer_writes) {
    auto [client, server] = co_await make_mappable_pair();
    std::vector<unsigned char> local_only(4096, 0);
    std::vector<unsigned char> writable(4096, 0);
    corio::iomap_registration none(server, asio::buffer(local_only), PROT_NONE, 0);
    BOOST_TEST_REQUIRE(none.is_mapped());
    BOOST_TEST(none.offset() == 0);
    // A local-only registration uses none of iomap_size's one slot.
    corio::iomap_registration write(server, asio::buffer(writable), PROT_WRITE, 8192);
    BOOST_TEST_REQUIRE(write.is_mapped());
    co_await asio::async_write(server, asio::buffer("m", 1), asio::use_awaitable);
    std::array<char, 1> hello{};
    co_await asio::async_read(client, asio::buffer(hello), asio::use_awaitable);

    // The writable one takes the peer's writes.
    client.add_remote_mapping(8192, writable.size());
    const auto data = pattern(512);
    BOOST_TEST(co_await client.async_iowrite(asio::buffer(data), 8192, asio::use_awaitable) ==
               data.size());
    co_await asio::async_write(client, asio::buffer("n", 1), asio::use_awaitable);
    co_await asio::async_read(server, asio::buffer(hello), asio::use_awaitable);
    BOOST_TEST(std::equal(data.begin(), data.end(), writable.begin()));

    // The local-only one does not, even when the application declares it.
    client.add_remote_mapping(0, local_only.size());
    auto [ec, n] = co_await client.async_iowrite(asio::buffer(data), 0,
                                                 asio::as_tuple(asio::use_awaitable));
    if (on_rsockets()) {
        // v44 never tells the peer of a PROT_NONE mapping: its riowrite finds none.
        BOOST_TEST((ec == corio::error::no_remote_mapping), ec.message());
    } else {
        // The sender cannot know; the receiver refuses the frame.
        BOOST_TEST(!ec, ec.message());
        auto [rec, rn] = co_await server.async_read_some(asio::buffer(hello),
                                                         asio::as_tuple(asio::use_awaitable));
        BOOST_TEST((rec == corio::error::protocol_error), rec.message());
    }
    BOOST_TEST(std::all_of(local_only.begin(), local_only.end(), [](unsigned char b) { return b == 0; }));
}
