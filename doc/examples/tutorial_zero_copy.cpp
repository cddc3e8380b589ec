// tutorial_zero_copy [ADDRESS]: step 5 of doc/tutorial.md. The server maps a buffer for the
// client to write into (iomap_registration), the client writes straight into it
// (async_iowrite) and then says so through the stream; the server never copies the bytes.
// Then the same over the zero-copy channel, which runs that protocol for a stream of messages.
#include <cstdint>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <sys/mman.h>

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <corio/acceptor.hpp>
#include <corio/error.hpp>
#include <corio/iomap_registration.hpp>
#include <corio/socket_base.hpp>
#include <corio/stream.hpp>
#include <corio/zero_copy_channel.hpp>

namespace asio = boost::asio;
using asio::use_awaitable;
using namespace asio::experimental::awaitable_operators;

constexpr std::size_t region_size = 64 * 1024;

// What the server tells the client: where in its mapping to write, and how much room it has.
struct mapping_notice {
    std::int64_t offset;
    std::uint64_t size;
};

asio::awaitable<void> server_side(corio::stream peer) {
    std::vector<unsigned char> region(region_size, 0);
    corio::iomap_registration mapped(peer, asio::buffer(region), PROT_WRITE, 0);
    // rsockets publish the mapping with this side's next send: this notice.
    const mapping_notice notice{mapped.offset(), mapped.size()};
    co_await asio::async_write(peer, asio::buffer(&notice, sizeof notice), use_awaitable);
    // iowrites are ordered with the stream: once this byte arrives, so have they.
    char done = 0;
    co_await asio::async_read(peer, asio::buffer(&done, 1), use_awaitable);
    for (std::size_t i = 0; i < region.size(); ++i)
        if (region[i] != static_cast<unsigned char>(i * 7))
            throw std::runtime_error("byte " + std::to_string(i) + " did not land");
    std::cout << "server: " << region.size() << " bytes landed intact in its mapped buffer\n";
}

asio::awaitable<void> client_side(corio::stream& stream) {
    mapping_notice notice{};
    co_await asio::async_read(stream, asio::buffer(&notice, sizeof notice), use_awaitable);
    // rsockets keep the peer's mappings to themselves: the stream is told what the protocol
    // agreed, and refuses iowrites outside it before they reach rdma-core.
    stream.add_remote_mapping(notice.offset, notice.size);
    std::vector<unsigned char> data(notice.size);
    for (std::size_t i = 0; i < data.size(); ++i)
        data[i] = static_cast<unsigned char>(i * 7);
    auto [ec, n] = co_await stream.async_iowrite(asio::buffer(data.data(), data.size() + 1),
                                                 notice.offset, as_tuple(use_awaitable));
    if (ec != corio::error::iowrite_out_of_bounds)
        throw std::runtime_error("a write past the mapping gave " + ec.message());
    std::cout << "client: one byte too many is iowrite_out_of_bounds (" << ec.message() << ")\n";
    n = co_await stream.async_iowrite(asio::buffer(data), notice.offset, use_awaitable);
    co_await asio::async_write(stream, asio::buffer("!", 1), use_awaitable);
    std::cout << "client: iowrote " << n << " bytes over " << corio::to_string(stream.transport())
              << '\n';
}

// A connected pair, server end first, each end with room for one peer mapping: set on both
// ends before they connect (on tcp this also turns on corio's framed emulation of riomap and
// riowrite, doc/tcp-transport.md).
asio::awaitable<std::tuple<corio::stream, corio::stream>>
connected_pair(asio::ip::address address) {
    const auto ex = co_await asio::this_coro::executor;
    const asio::ip::tcp::endpoint local(address, 0);
    corio::acceptor acceptor(ex);
    corio::stream client(ex);
    acceptor.open(corio::transport::automatic, local.protocol());
    client.open(corio::transport::automatic, local.protocol());
    acceptor.set_option(corio::socket_base::iomap_size(1));
    client.set_option(corio::socket_base::iomap_size(1));
    acceptor.bind(local);
    acceptor.listen();
    auto server = co_await (acceptor.async_accept(use_awaitable) &&
                            client.async_connect(acceptor.local_endpoint(), use_awaitable));
    co_return std::make_tuple(std::move(server), std::move(client));
}

// The channel's sender: each async_send iowrites into a slot the receiver granted.
asio::awaitable<void> channel_send(corio::stream stream) {
    corio::zero_copy_sender tx(std::move(stream));
    co_await tx.async_handshake(use_awaitable);
    for (const std::string_view text : {"first", "second", "third"})
        co_await tx.async_send(asio::buffer(text), use_awaitable); // waits for a free slot
    co_await tx.async_shutdown(use_awaitable); // completes once the receiver has closed
}

// The channel's receiver: two slots, so the third message needs the first one's slot back,
// which destroying the message gives.
asio::awaitable<void> channel_receive(corio::stream stream) {
    corio::zero_copy_receiver rx(std::move(stream), {.slot_count = 2, .slot_size = 4096});
    co_await rx.async_handshake(use_awaitable);
    std::string received;
    for (int i = 0; i < 3; ++i) {
        const corio::zero_copy_message message = co_await rx.async_receive(use_awaitable);
        received.append(reinterpret_cast<const char*>(message.data()), message.size()) += ' ';
    }
    if (received != "first second third ")
        throw std::runtime_error("the channel delivered '" + received + "'");
    std::cout << "channel: received " << received << "through 2 slots\n";
}

asio::awaitable<void> run(asio::ip::address address) {
    auto [server, client] = co_await connected_pair(address);
    co_await (server_side(std::move(server)) && client_side(client));
    auto [receiving, sending] = co_await connected_pair(address);
    co_await (channel_receive(std::move(receiving)) && channel_send(std::move(sending)));
}

int main(int argc, char** argv) try {
    asio::io_context io;
    auto done = asio::co_spawn(io, run(asio::ip::make_address(argc > 1 ? argv[1] : "127.0.0.1")),
                               asio::use_future);
    io.run();
    done.get();
} catch (const std::exception& e) {
    std::cerr << "tutorial_zero_copy: " << e.what() << '\n';
    return 1;
}
