// tutorial_latency [ADDRESS]: step 7 of doc/tutorial.md. A 64-byte ping-pong between a client
// and a server on io_contexts of their own, run in the three ways corio can wait: thread mode
// with the adaptive spin off, thread mode with it (the default), and busy mode. The client
// uses Asio's composed operations; the server is written as riostream's loops are, try first
// and wait only when the call would block (non_blocking, read_some, write_some, async_wait).
#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <exception>
#include <future>
#include <iomanip>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>

#include <boost/asio.hpp>

#include <corio/acceptor.hpp>
#include <corio/poll_mode.hpp>
#include <corio/rpoll_service.hpp>
#include <corio/stream.hpp>
#include <corio/transport.hpp>

namespace asio = boost::asio;
using asio::use_awaitable;
using namespace std::chrono_literals;

constexpr int round_trips = 1000;
constexpr std::size_t message_size = 64;

// How one run waits: the mode of both ends' services and their spin budget.
struct waiting {
    corio::poll_mode mode;
    std::chrono::nanoseconds spin_budget;

    std::string label() const {
        if (mode == corio::poll_mode::busy)
            return "busy mode";
        const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(spin_budget);
        return "thread mode, spin budget " + std::to_string(micros.count()) + " us";
    }
};

// How the server's try-first calls went.
struct server_counts {
    int calls = 0; // read_some and write_some calls
    int waits = 0; // of which reported would_block and waited
};

// Makes `call` until it moves bytes or fails, waiting for `what` each time it would block.
// Errors other than would_block (eof included) end the loop and are returned with 0 bytes.
template <class Call>
asio::awaitable<std::size_t> try_then_wait(corio::stream& stream, corio::stream::wait_type what,
                                           server_counts& counts, boost::system::error_code& ec,
                                           Call call) {
    for (;;) {
        ++counts.calls;
        const std::size_t n = call(ec);
        if (ec != asio::error::would_block)
            co_return n;
        // Nothing to take or no room: only now is a wait worth its operation.
        ++counts.waits;
        co_await stream.async_wait(what, use_awaitable);
    }
}

// Echoes every message back until the client closes (eof).
asio::awaitable<server_counts> serve(corio::acceptor& acceptor) {
    corio::stream peer = co_await acceptor.async_accept(use_awaitable);
    // From here on read_some and write_some report would_block instead of blocking the
    // thread; asynchronous operations behave as before.
    peer.non_blocking(true);
    server_counts counts;
    std::array<char, message_size> data;
    for (;;) {
        boost::system::error_code ec;
        std::size_t have = 0;
        while (have < data.size()) {
            const auto n = co_await try_then_wait(
                peer, corio::stream::wait_read, counts, ec, [&](boost::system::error_code& e) {
                    return peer.read_some(asio::buffer(data) + have, e);
                });
            if (ec == asio::error::eof && have == 0)
                co_return counts;
            if (ec)
                throw boost::system::system_error(ec, "server read");
            have += n;
        }
        for (std::size_t sent = 0; sent < data.size();) {
            sent += co_await try_then_wait(peer, corio::stream::wait_write, counts, ec,
                                           [&](boost::system::error_code& e) {
                                               return peer.write_some(asio::buffer(data) + sent, e);
                                           });
            if (ec)
                throw boost::system::system_error(ec, "server write");
        }
    }
}

// Sends round_trips numbered messages and checks that each comes back as it was sent;
// returns the time they took.
asio::awaitable<std::chrono::nanoseconds> ping(asio::ip::tcp::endpoint server,
                                               std::string& transport) {
    corio::stream stream(co_await asio::this_coro::executor);
    co_await stream.async_connect(server, use_awaitable);
    transport = corio::to_string(stream.transport());
    std::array<char, message_size> out;
    std::array<char, message_size> in;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < round_trips; ++i) {
        std::fill(out.begin(), out.end(), static_cast<char>('a' + i % 26));
        co_await asio::async_write(stream, asio::buffer(out), use_awaitable);
        co_await asio::async_read(stream, asio::buffer(in), use_awaitable);
        if (in != out)
            throw std::runtime_error("round trip " + std::to_string(i) + " came back changed");
    }
    const auto elapsed = std::chrono::steady_clock::now() - start;
    stream.shutdown(corio::stream::shutdown_send); // the server's read sees eof
    co_return elapsed;
}

// Puts the rpoll_service of `io` (one per execution context) in `how`'s way of waiting.
void configure(asio::io_context& io, const waiting& how) {
    corio::set_poll_mode(io, how.mode);
    corio::rpoll_service_of(io.get_executor()).set_spin_budget(how.spin_budget);
}

void run(const asio::ip::address& address, const waiting& how) {
    // Each end has an io_context and a thread of its own, as two processes would: a wait
    // that spins holds its thread, and the answer it spins for comes from the other one.
    asio::io_context server_io;
    asio::io_context client_io;
    configure(server_io, how);
    configure(client_io, how);
    corio::acceptor acceptor(server_io, {address, 0});
    auto served = asio::co_spawn(server_io, serve(acceptor), asio::use_future);
    std::string transport;
    auto pinged =
        asio::co_spawn(client_io, ping(acceptor.local_endpoint(), transport), asio::use_future);
    std::thread server_thread([&] { server_io.run(); });
    client_io.run();
    std::chrono::nanoseconds elapsed{};
    try {
        elapsed = pinged.get();
    } catch (...) {
        // A client that failed before it connected leaves the server in async_accept, whose
        // thread would otherwise never return.
        server_io.stop();
        server_thread.join();
        throw;
    }
    server_thread.join();
    const auto counts = served.get();
    const double micros = std::chrono::duration<double, std::micro>(elapsed).count();
    std::cout << how.label() << ": " << round_trips << " round trips of " << message_size
              << " bytes over " << transport << ", " << std::fixed << std::setprecision(1)
              << micros / round_trips << " us each; the server made " << counts.calls
              << " calls and waited after " << counts.waits << " of them\n";
    // Every message takes at least one read and one write; a call that waited is made again.
    if (counts.calls < 2 * round_trips + counts.waits)
        throw std::runtime_error("the server's counts do not add up");
}

int main(int argc, char** argv) try {
    const auto address = asio::ip::make_address(argc > 1 ? argv[1] : "127.0.0.1");
    // A service starts in thread mode with the default budget, the second way below.
    constexpr auto default_budget = corio::rpoll_service::default_spin_budget;
    const waiting ways[] = {
        {corio::poll_mode::thread, 0ns},
        {corio::poll_mode::thread, default_budget},
        {corio::poll_mode::busy, default_budget},
    };
    for (const auto& how : ways)
        run(address, how);
} catch (const std::exception& e) {
    std::cerr << "tutorial_latency: " << e.what() << '\n';
    return 1;
}
