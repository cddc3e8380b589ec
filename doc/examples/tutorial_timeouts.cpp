// tutorial_timeouts [ADDRESS]: step 2 of doc/tutorial.md. Three ways to stop an operation
// that waits too long (a timer raced with `||`, a cancellation slot, cancel()), and the
// errors a stream's operations end with.
#include <chrono>
#include <iostream>
#include <stdexcept>
#include <string>
#include <string_view>

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <corio/acceptor.hpp>
#include <corio/stream.hpp>

namespace asio = boost::asio;
using asio::use_awaitable;
using namespace asio::experimental::awaitable_operators;
using namespace std::chrono_literals;

void expect(std::string_view what, boost::system::error_code ec, boost::system::error_code wanted) {
    if (ec != wanted)
        throw std::runtime_error(std::string(what) + ": expected " + wanted.message() + ", got " +
                                 ec.message());
}

// After `delay`, calls `f` on this coroutine's executor.
template <class F> asio::awaitable<void> after(std::chrono::milliseconds delay, F f) {
    asio::steady_timer timer(co_await asio::this_coro::executor, delay);
    co_await timer.async_wait(use_awaitable);
    f();
}

asio::awaitable<void> run(asio::ip::address address) {
    const auto ex = co_await asio::this_coro::executor;
    corio::acceptor acceptor(ex, {address, 0});
    corio::stream client(ex);
    auto server = co_await (acceptor.async_accept(use_awaitable) &&
                            client.async_connect(acceptor.local_endpoint(), use_awaitable));
    std::cout << "connected over " << corio::to_string(client.transport()) << '\n';
    char data[16];

    // 1. A timeout: whichever finishes first wins, and `||` cancels the other. The server
    // sends nothing, so the timer wins and the read is cancelled: it completes with
    // operation_aborted, which `||` swallows. No byte is lost by that: the stream stays usable.
    asio::steady_timer timer(ex, 100ms);
    auto first = co_await (client.async_read_some(asio::buffer(data), use_awaitable) ||
                           timer.async_wait(use_awaitable));
    if (first.index() != 1)
        throw std::runtime_error("the read finished before the timer");
    std::cout << "read || 100 ms timer: the timer won, the read was cancelled\n";
    co_await asio::async_write(server, asio::buffer("x", 1), use_awaitable);
    auto n = co_await client.async_read_some(asio::buffer(data), use_awaitable);
    std::cout << "the stream still works: read " << n << " byte after the timeout\n";

    // 2. A cancellation slot: whoever holds the signal can end this one operation. Every
    // corio operation supports the terminal, partial and total cancellation types.
    asio::cancellation_signal signal;
    asio::co_spawn(ex, after(50ms, [&] { signal.emit(asio::cancellation_type::terminal); }),
                   asio::detached);
    auto [slot_ec, slot_n] = co_await client.async_read_some(
        asio::buffer(data), asio::bind_cancellation_slot(signal.slot(), as_tuple(use_awaitable)));
    expect("cancellation slot", slot_ec, asio::error::operation_aborted);
    std::cout << "cancellation slot: operation_aborted after " << slot_n << " bytes\n";

    // 3. cancel(): ends every operation pending on the stream; the socket stays open.
    asio::co_spawn(ex, after(50ms, [&] { client.cancel(); }), asio::detached);
    auto [cancel_ec, cancel_n] =
        co_await client.async_read_some(asio::buffer(data), as_tuple(use_awaitable));
    expect("cancel()", cancel_ec, asio::error::operation_aborted);
    std::cout << "cancel(): operation_aborted, and the stream is still open: " << std::boolalpha
              << client.is_open() << '\n';

    // 4. The peer's orderly close: eof, the normal end of a stream, not a failure.
    server.close();
    auto [eof_ec, eof_n] =
        co_await client.async_read_some(asio::buffer(data), as_tuple(use_awaitable));
    expect("peer closed", eof_ec, asio::error::eof);
    std::cout << "peer closed: eof (" << eof_ec.message() << ")\n";

    // 5. Operations on a closed stream: bad_descriptor.
    client.close();
    auto [closed_ec, closed_n] =
        co_await client.async_write_some(asio::buffer("x", 1), as_tuple(use_awaitable));
    expect("closed stream", closed_ec, asio::error::bad_descriptor);
    std::cout << "closed stream: bad_descriptor (" << closed_ec.message() << ")\n";

    // 6. Nobody listening at the address: connection_refused. The port of a socket that is
    // bound but never listens takes no connection. (Not the port of an acceptor just
    // closed: on rsockets close() leaves rclose to a background thread, and until it has
    // run the port still takes connections.)
    corio::stream bound_only(ex);
    bound_only.open(acceptor.transport(), acceptor.local_endpoint().protocol());
    bound_only.bind({address, 0});
    corio::stream late(ex);
    auto [refused_ec] =
        co_await late.async_connect(bound_only.local_endpoint(), as_tuple(use_awaitable));
    expect("nobody listening", refused_ec, asio::error::connection_refused);
    std::cout << "nobody listening: connection_refused (" << refused_ec.message() << ")\n";
}

int main(int argc, char** argv) try {
    asio::io_context io;
    auto done = asio::co_spawn(io, run(asio::ip::make_address(argc > 1 ? argv[1] : "127.0.0.1")),
                               asio::use_future);
    io.run();
    done.get(); // rethrows what the coroutine threw
} catch (const std::exception& e) {
    std::cerr << "tutorial_timeouts: " << e.what() << '\n';
    return 1;
}
