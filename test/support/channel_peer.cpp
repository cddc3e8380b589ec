// A zero-copy channel end in a process of its own, for tests of what the
// other end sees when it dies: it connects to the address given (iomap_size
// 1), shakes hands in the role given, then
//   sender:   sends 100-byte messages (byte i of message k is k + i) until
//             one waits for a credit;
//   receiver: (4 slots of 4096 bytes) receives messages and never releases
//             them;
// and waits to be killed.
//   channel_peer tcp|rsocket ADDRESS PORT sender|receiver
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <corio/socket_base.hpp>
#include <corio/stream.hpp>
#include <corio/zero_copy_channel.hpp>

namespace asio = boost::asio;

int main(int argc, char** argv) {
    if (argc != 5) {
        std::fputs("usage: channel_peer tcp|rsocket ADDRESS PORT sender|receiver\n", stderr);
        return 2;
    }
    const auto transport =
        std::string_view(argv[1]) == "rsocket" ? corio::transport::rsocket : corio::transport::tcp;
    const asio::ip::tcp::endpoint peer(asio::ip::make_address(argv[2]),
                                       static_cast<unsigned short>(std::atoi(argv[3])));
    const bool sender = std::string_view(argv[4]) == "sender";
    asio::io_context context;
    asio::co_spawn(
        context,
        [&]() -> asio::awaitable<void> {
            corio::stream stream(context);
            stream.open(transport, peer.protocol());
            stream.set_option(corio::socket_base::iomap_size(1));
            co_await stream.async_connect(peer, asio::use_awaitable);
            if (sender) {
                corio::zero_copy_sender tx(std::move(stream));
                co_await tx.async_handshake(asio::use_awaitable);
                std::vector<unsigned char> message(100);
                for (unsigned k = 0;; ++k) {
                    for (unsigned i = 0; i < message.size(); ++i)
                        message[i] = static_cast<unsigned char>(k + i);
                    co_await tx.async_send(asio::buffer(message), asio::use_awaitable);
                }
            } else {
                corio::zero_copy_receiver rx(std::move(stream), {4, 4096});
                co_await rx.async_handshake(asio::use_awaitable);
                std::vector<corio::zero_copy_message> held;
                for (;;)
                    held.push_back(co_await rx.async_receive(asio::use_awaitable));
            }
        },
        [](std::exception_ptr e) {
            if (e) {
                try {
                    std::rethrow_exception(e);
                } catch (const std::exception& error) {
                    std::fprintf(stderr, "channel_peer: %s\n", error.what());
                }
            }
            std::exit(1);
        });
    context.run();
    return 1;
}
