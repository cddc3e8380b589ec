// One thread, one io_context, loopback TCP: a client coroutine and an echo
// coroutine bounce 64 bytes with async_write_some and async_read_some,
// ROUND_TRIPS times, while IDLE further connections each keep an
// async_read_some pending that never completes. Run on corio's tcp transport
// (rpoll service, poller thread or busy polling) or on Asio's tcp::socket
// (epoll reactor).
//
// Used by test/bench/compare two ways:
//   * instructions: under valgrind --tool=callgrind, the difference between
//     two round-trip counts gives the instructions of one round trip (two
//     async_read_some and two async_write_some), free of set-up costs;
//   * idle streams: the time per round trip as IDLE grows shows what one
//     rpoll over the idle sockets costs (epoll does not look at them).
//
//   round_trips corio|asio thread|busy ROUND_TRIPS [IDLE]
// Prints one line: impl, mode, round trips, idle, usec per round trip.
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <corio/acceptor.hpp>
#include <corio/rpoll_service.hpp>
#include <corio/stream.hpp>

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;

namespace {

constexpr std::size_t message_size = 64;

struct corio_sockets {
    using socket = corio::stream;
    using acceptor = corio::acceptor;
    static acceptor listen(const asio::any_io_executor& ex, const asio::ip::tcp::endpoint& at) {
        return acceptor(ex, at, corio::transport::tcp);
    }
    static socket make(const asio::any_io_executor& ex) { return socket(ex, corio::transport::tcp); }
};

struct asio_sockets {
    using socket = asio::ip::tcp::socket;
    using acceptor = asio::ip::tcp::acceptor;
    static acceptor listen(const asio::any_io_executor& ex, const asio::ip::tcp::endpoint& at) {
        return acceptor(ex, at);
    }
    static socket make(const asio::any_io_executor& ex) { return socket(ex); }
};

template <class Socket>
asio::awaitable<void> read_message(Socket& s, std::array<char, message_size>& buffer) {
    for (std::size_t got = 0; got < buffer.size();)
        got += co_await s.async_read_some(asio::buffer(buffer.data() + got, buffer.size() - got),
                                          asio::use_awaitable);
}

template <class Socket>
asio::awaitable<void> write_message(Socket& s, const std::array<char, message_size>& buffer) {
    for (std::size_t put = 0; put < buffer.size();)
        put += co_await s.async_write_some(asio::buffer(buffer.data() + put, buffer.size() - put),
                                           asio::use_awaitable);
}

template <class Socket>
asio::awaitable<void> echo(Socket& s, std::size_t round_trips) {
    std::array<char, message_size> buffer{};
    for (std::size_t i = 0; i < round_trips; ++i) {
        co_await read_message(s, buffer);
        co_await write_message(s, buffer);
    }
}

template <class Socket>
asio::awaitable<void> ping(Socket& s, std::size_t round_trips) {
    std::array<char, message_size> buffer{};
    buffer.fill('p');
    for (std::size_t i = 0; i < round_trips; ++i) {
        co_await write_message(s, buffer);
        co_await read_message(s, buffer);
    }
}

template <class Sockets>
asio::awaitable<double> run(std::size_t round_trips, std::size_t idle) {
    using socket = typename Sockets::socket;
    const auto ex = co_await asio::this_coro::executor;
    auto acceptor = Sockets::listen(ex, {asio::ip::make_address("127.0.0.1"), 0});
    const auto where = acceptor.local_endpoint();
    auto connect_pair = [&]() -> asio::awaitable<std::pair<socket, socket>> {
        auto client = Sockets::make(ex);
        auto server = co_await (acceptor.async_accept(asio::use_awaitable) &&
                                client.async_connect(where, asio::use_awaitable));
        co_return std::pair<socket, socket>(std::move(client), std::move(server));
    };

    auto active = co_await connect_pair();
    // Idle connections: one end waits to read, forever (until closed).
    std::vector<std::unique_ptr<std::pair<socket, socket>>> idlers;
    std::vector<char> sink(idle + 1);
    for (std::size_t i = 0; i < idle; ++i) {
        idlers.push_back(std::make_unique<std::pair<socket, socket>>(co_await connect_pair()));
        idlers.back()->second.async_read_some(asio::buffer(&sink[i], 1), [](auto, auto) {});
    }

    const auto start = std::chrono::steady_clock::now();
    co_await (ping(active.first, round_trips) && echo(active.second, round_trips));
    const auto elapsed = std::chrono::steady_clock::now() - start;

    for (auto& pair : idlers) {
        pair->first.close();
        pair->second.close();
    }
    co_return std::chrono::duration<double, std::micro>(elapsed).count() /
        static_cast<double>(round_trips);
}

[[noreturn]] void usage() {
    std::fprintf(stderr, "usage: round_trips corio|asio thread|busy ROUND_TRIPS [IDLE]\n");
    std::exit(2);
}

std::size_t number(const char* text, bool zero_ok) {
    char* end = nullptr;
    const long long value = std::strtoll(text, &end, 10);
    if (end == text || *end != '\0' || value < (zero_ok ? 0 : 1))
        usage();
    return static_cast<std::size_t>(value);
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 4 || argc > 5)
        usage();
    const std::string_view impl = argv[1];
    const std::string_view mode = argv[2];
    if ((impl != "corio" && impl != "asio") || (mode != "thread" && mode != "busy"))
        usage();
    const auto round_trips = number(argv[3], false);
    const auto idle = argc == 5 ? number(argv[4], true) : 0;

    asio::io_context context(1);
    if (impl == "corio")
        corio::set_poll_mode(context, mode == "busy" ? corio::poll_mode::busy
                                                     : corio::poll_mode::thread);
    double usec = 0;
    int status = 0;
    auto done = [&](std::exception_ptr e, double result) {
        if (!e) {
            usec = result;
            return;
        }
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& error) {
            std::fprintf(stderr, "round_trips: %s\n", error.what());
            status = 1;
        }
    };
    if (impl == "corio")
        asio::co_spawn(context, run<corio_sockets>(round_trips, idle), done);
    else
        asio::co_spawn(context, run<asio_sockets>(round_trips, idle), done);
    context.run();
    if (status == 0)
        std::printf("%s %s round_trips %zu idle %zu usec_per_round_trip %.3f\n",
                    std::string(impl).c_str(), std::string(mode).c_str(), round_trips, idle, usec);
    return status;
}
