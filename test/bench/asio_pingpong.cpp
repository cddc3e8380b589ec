// The async baseline of the host TCP benchmark (test/bench/compare): rstream's
// benchmark protocol on a plain Boost.Asio tcp::socket driven by a coroutine
// on a one-thread io_context (epoll), so that coriostream's tcp transport
// (rpoll) can be compared with Asio's own reactor doing the same work.
//
// Protocol, as rstream's run_test: the client sends 16 bytes and the server
// answers 16; then each iteration the client sends transfer_count transfers
// of transfer_size bytes and receives as many back. SO_SNDBUF and SO_RCVBUF
// are 512 KiB and TCP_NODELAY is on, as rstream sets them. Prints rstream's
// header and one `custom` row in its format, so compare reads it like the
// others.
//
//   asio_pingpong [-s HOST] [-b ADDR] [-p PORT] [-S SIZE] [-C COUNT] [-I ITERS]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <unistd.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

struct settings {
    std::string server; // -s: makes this the client; without it, the server
    std::string bind;   // -b: the server's address (all without it)
    std::string port = "7471";
    std::size_t size = 1000; // rstream's custom defaults
    std::size_t count = 1000;
    std::size_t iterations = 1;
};

// rstream's size_str and cnt_str: binary units for sizes, decimal for
// counts, truncated, one decimal below 10 when not zero.
std::string unit_string(long long value, long long base, const char* units) {
    long long divisor = 1;
    int unit = 0;
    while (unit < 3 && value / divisor >= base) {
        divisor *= base;
        ++unit;
    }
    // Room for the widest "%lld.%lld%c" (20 + 1 + 20 + 1 and the NUL), not
    // only the widest this function writes: GCC's format check, an error
    // under -Werror, does not always see that tenth has one digit (with
    // -Db_coverage=true it did not).
    char text[48];
    if (unit == 0) {
        std::snprintf(text, sizeof text, "%lld", value);
    } else {
        const long long whole = value / divisor;
        const long long tenth = (value % divisor) * 10 / divisor;
        if (whole < 10 && tenth != 0)
            std::snprintf(text, sizeof text, "%lld.%lld%c", whole, tenth, units[unit]);
        else
            std::snprintf(text, sizeof text, "%lld%c", whole, units[unit]);
    }
    return text;
}

void show_perf(const settings& s, std::chrono::microseconds elapsed) {
    const float usec = static_cast<float>(elapsed.count());
    const long long bytes = static_cast<long long>(s.iterations * s.count * s.size * 2);
    std::printf("%-10s%-8s%-8s%-8s%-8s%8.2fs%10.2f%11.2f\n", "custom",
                unit_string(static_cast<long long>(s.size), 1024, " kmg").c_str(),
                unit_string(static_cast<long long>(s.count), 1000, " kmb").c_str(),
                unit_string(static_cast<long long>(s.iterations), 1000, " kmb").c_str(),
                unit_string(bytes, 1024, " kmg").c_str(), usec / 1000000.,
                (static_cast<double>(bytes) * 8) / (1000. * usec),
                (usec / static_cast<float>(s.iterations)) / static_cast<float>(s.count * 2));
}

void print_header() {
    std::printf("%-10s%-8s%-8s%-8s%-8s%8s %10s%13s\n", "name", "bytes", "xfers", "iters", "total",
                "time", "Gb/sec", "usec/xfer");
    std::fflush(stdout);
}

void set_options(tcp::socket& socket) {
    socket.set_option(asio::socket_base::send_buffer_size(1 << 19));
    socket.set_option(asio::socket_base::receive_buffer_size(1 << 19));
    socket.set_option(tcp::no_delay(true));
}

// Every co_await on a plain call, its operands in locals: g++ 12 mis-compiles
// some temporaries inside co_await expressions.
asio::awaitable<void> send(tcp::socket& socket, std::vector<char>& buffer, std::size_t n) {
    co_await asio::async_write(socket, asio::buffer(buffer.data(), n), asio::use_awaitable);
}

asio::awaitable<void> recv(tcp::socket& socket, std::vector<char>& buffer, std::size_t n) {
    co_await asio::async_read(socket, asio::buffer(buffer.data(), n), asio::use_awaitable);
}

asio::awaitable<void> run_test(tcp::socket socket, const settings& s, bool client) {
    std::vector<char> buffer(std::max<std::size_t>(s.size, 16));
    if (client) {
        co_await send(socket, buffer, 16);
        co_await recv(socket, buffer, 16);
    } else {
        co_await recv(socket, buffer, 16);
        co_await send(socket, buffer, 16);
    }
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < s.iterations; ++i) {
        for (std::size_t t = 0; t < s.count; ++t) {
            if (client)
                co_await send(socket, buffer, s.size);
            else
                co_await recv(socket, buffer, s.size);
        }
        for (std::size_t t = 0; t < s.count; ++t) {
            if (client)
                co_await recv(socket, buffer, s.size);
            else
                co_await send(socket, buffer, s.size);
        }
    }
    const auto end = std::chrono::steady_clock::now();
    show_perf(s, std::chrono::duration_cast<std::chrono::microseconds>(end - start));
    socket.shutdown(tcp::socket::shutdown_both);
}

asio::awaitable<void> run(const settings& s) {
    auto executor = co_await asio::this_coro::executor;
    tcp::resolver resolver(executor);
    const bool client = !s.server.empty();
    if (client) {
        print_header();
        const auto endpoints = co_await resolver.async_resolve(s.server, s.port, asio::use_awaitable);
        tcp::socket socket(executor);
        socket.open(endpoints.begin()->endpoint().protocol());
        set_options(socket);
        co_await socket.async_connect(endpoints.begin()->endpoint(), asio::use_awaitable);
        co_await run_test(std::move(socket), s, true);
    } else {
        const std::string host = s.bind.empty() ? std::string("0.0.0.0") : s.bind;
        const auto endpoints =
            co_await resolver.async_resolve(host, s.port, tcp::resolver::passive, asio::use_awaitable);
        tcp::acceptor acceptor(executor);
        const auto local = endpoints.begin()->endpoint();
        acceptor.open(local.protocol());
        acceptor.set_option(asio::socket_base::reuse_address(true));
        acceptor.bind(local);
        acceptor.listen(1);
        // Once listening, as rstream: a script waiting for the header may
        // start the client.
        print_header();
        auto socket = co_await acceptor.async_accept(asio::use_awaitable);
        set_options(socket);
        co_await run_test(std::move(socket), s, false);
    }
    std::fflush(stdout);
}

[[noreturn]] void usage() {
    std::fprintf(stderr,
                 "usage: asio_pingpong [-s HOST] [-b ADDR] [-p PORT] [-S SIZE] [-C COUNT] [-I ITERS]\n");
    std::exit(1);
}

std::size_t positive(const char* text) {
    char* end = nullptr;
    const long long value = std::strtoll(text, &end, 10);
    if (end == text || *end != '\0' || value <= 0)
        usage();
    return static_cast<std::size_t>(value);
}

} // namespace

int main(int argc, char** argv) {
    settings s;
    for (int op; (op = getopt(argc, argv, "s:b:p:S:C:I:")) != -1;) {
        switch (op) {
        case 's': s.server = optarg; break;
        case 'b': s.bind = optarg; break;
        case 'p': s.port = optarg; break;
        case 'S': s.size = positive(optarg); break;
        case 'C': s.count = positive(optarg); break;
        case 'I': s.iterations = positive(optarg); break;
        default: usage();
        }
    }
    if (optind != argc)
        usage();
    asio::io_context context(1);
    int status = 0;
    asio::co_spawn(context, run(s), [&](std::exception_ptr e) {
        if (!e)
            return;
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& error) {
            std::fprintf(stderr, "asio_pingpong: %s\n", error.what());
            status = 1;
        }
    });
    context.run();
    return status;
}
