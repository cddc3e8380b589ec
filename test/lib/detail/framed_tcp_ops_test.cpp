#define BOOST_TEST_MODULE framed_tcp_ops
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include <netinet/in.h>
#include <rdma/rsocket.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>

#include <corio/detail/framed_tcp_ops.hpp>
#include <corio/detail/posix_socket_ops.hpp>
#include <corio/detail/tcp_frame.hpp>
#include <corio/detail/unique_socket.hpp>
#include <corio/error.hpp>
#include <corio/socket_base.hpp>

// The TCP emulation of riomap/riowrite at the ops-table level: real kernel
// sockets over loopback, nonblocking, driven by hand so that partial writes
// and reads happen where the test wants them. <rdma/rsocket.h> gives the
// option's constants only.

namespace frame = corio::detail::tcp_frame;
using boost::system::error_code;
using corio::detail::framed_tcp_ops;
using corio::detail::poll_timeout;
using corio::detail::posix_socket_ops;
using corio::detail::remote_mapping;
using corio::detail::unique_socket;
using bytes = std::vector<std::byte>;

namespace {

void check(const error_code& ec, const char* what) {
    if (ec)
        throw boost::system::system_error(ec, what);
}

bool would_block(const error_code& ec) {
    return ec == boost::asio::error::would_block || ec == boost::asio::error::try_again;
}

/// A socket on the posix table, with iomap_size recorded when above zero and
/// moved to the framed table as corio's connect and listen do.
unique_socket open_socket(int iomap_size, int buffer_size = 0) {
    error_code ec;
    unique_socket s(posix_socket_ops.open(AF_INET, SOCK_STREAM, 0, ec), posix_socket_ops);
    check(ec, "socket");
    if (buffer_size > 0) {
        check(posix_socket_ops.setsockopt(s.get(), SOL_SOCKET, SO_SNDBUF, &buffer_size,
                                          sizeof buffer_size),
              "SO_SNDBUF");
        check(posix_socket_ops.setsockopt(s.get(), SOL_SOCKET, SO_RCVBUF, &buffer_size,
                                          sizeof buffer_size),
              "SO_RCVBUF");
    }
    if (iomap_size > 0) {
        check(posix_socket_ops.setsockopt(s.get(), SOL_RDMA, RDMA_IOMAPSIZE, &iomap_size,
                                          sizeof iomap_size),
              "RDMA_IOMAPSIZE");
        corio::detail::framed_tcp::adopt_if_requested(s);
    }
    return s;
}

/// client first, then the accepted server side; both nonblocking.
std::pair<unique_socket, unique_socket> make_pair(int client_iomap, int server_iomap,
                                                  int buffer_size = 0) {
    auto listener = open_socket(server_iomap, buffer_size);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    auto* addr = reinterpret_cast<sockaddr*>(&address);
    check(listener.ops()->bind(listener.get(), addr, length), "bind");
    check(listener.ops()->listen(listener.get(), 1), "listen");
    check(listener.ops()->getsockname(listener.get(), addr, &length), "getsockname");
    auto client = open_socket(client_iomap, buffer_size);
    check(client.ops()->connect(client.get(), addr, length), "connect");
    error_code ec;
    unique_socket server(listener.ops()->accept(listener.get(), nullptr, nullptr, ec),
                         *listener.ops());
    check(ec, "accept");
    check(client.ops()->set_nonblocking(client.get(), true), "nonblocking");
    check(server.ops()->set_nonblocking(server.get(), true), "nonblocking");
    return {std::move(client), std::move(server)};
}

bytes pattern(std::size_t n, unsigned seed) {
    bytes v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = static_cast<std::byte>(((i * 131) + seed) >> 2);
    return v;
}

bytes text(const std::string& s) {
    bytes b(s.size());
    std::memcpy(b.data(), s.data(), s.size());
    return b;
}

void wait_for(const unique_socket& s, short events) {
    pollfd fd{s.get(), events, 0};
    error_code ec;
    s.ops()->poll(&fd, 1, poll_timeout::infinite, ec);
    check(ec, "poll");
}

/// Sends all of `data`, waiting for room; the peer must not need to read.
void send_all(const unique_socket& s, const bytes& data) {
    std::size_t done = 0;
    while (done < data.size()) {
        error_code ec;
        done += s.ops()->send(s.get(), data.data() + done, data.size() - done, 0, ec);
        if (would_block(ec))
            wait_for(s, POLLOUT);
        else
            check(ec, "send");
    }
}

/// Receives exactly `n` bytes, waiting for them.
bytes receive_exactly(const unique_socket& s, std::size_t n, std::size_t chunk = 4096) {
    bytes out(n);
    std::size_t done = 0;
    while (done < n) {
        error_code ec;
        done += s.ops()->recv(s.get(), out.data() + done, std::min(chunk, n - done), 0, ec);
        if (would_block(ec))
            wait_for(s, POLLIN);
        else
            check(ec, "recv");
    }
    return out;
}

/// What the next receive reports once something arrives.
error_code receive_error(const unique_socket& s) {
    std::array<std::byte, 64> buf{};
    for (;;) {
        error_code ec;
        (void)s.ops()->recv(s.get(), buf.data(), buf.size(), 0, ec);
        if (!would_block(ec))
            return ec;
        wait_for(s, POLLIN);
    }
}

/// Receives whatever `s` has now into `sink`; a failure other than
/// would_block throws.
void drain(const unique_socket& s, bytes& sink) {
    std::array<std::byte, 65536> chunk{};
    error_code ec;
    const std::size_t n = s.ops()->recv(s.get(), chunk.data(), chunk.size(), 0, ec);
    if (!would_block(ec))
        check(ec, "recv");
    sink.insert(sink.end(), chunk.begin(), chunk.begin() + static_cast<long>(n));
}

/// Calls `attempt` (which returns the bytes it moved) until `n` bytes have
/// moved, draining `reader` into `sink` in between so that the writer never
/// waits on a receiver that does not read.
template <class Attempt>
void pump(std::size_t n, Attempt attempt, const unique_socket& reader, bytes& sink) {
    std::size_t done = 0;
    while (done < n) {
        error_code ec;
        done += attempt(done, ec);
        if (!would_block(ec))
            check(ec, "write");
        drain(reader, sink);
    }
}

void append(bytes& out, const frame::header_bytes& h) { out.insert(out.end(), h.begin(), h.end()); }
void append(bytes& out, const bytes& b) { out.insert(out.end(), b.begin(), b.end()); }

/// A region with guard bytes on both sides, for checking that nothing lands
/// outside the mapping.
struct guarded_region {
    explicit guarded_region(std::size_t n, std::byte fill = std::byte{0})
        : memory(guard + n + guard, guard_byte) {
        std::fill_n(data(), n, fill);
        size = n;
    }
    std::byte* data() { return memory.data() + guard; }
    bool guards_intact() const {
        const auto is_guard = [](std::byte b) { return b == guard_byte; };
        return std::all_of(memory.begin(), memory.begin() + guard, is_guard) &&
               std::all_of(memory.end() - guard, memory.end(), is_guard);
    }
    static constexpr std::size_t guard = 4096;
    static constexpr std::byte guard_byte{0xee};
    bytes memory;
    std::size_t size;
};

off_t map(const unique_socket& s, guarded_region& region, off_t offset) {
    error_code ec;
    const off_t at = s.ops()->iomap(s.get(), region.data(), region.size, PROT_WRITE, offset, ec);
    check(ec, "iomap");
    return at;
}

} // namespace

BOOST_AUTO_TEST_CASE(iomap_size_on_a_kernel_socket_is_recorded_rounded_and_moves_it_to_the_framed_table) {
    auto s = open_socket(200);
    BOOST_TEST(s.ops() == &framed_tcp_ops);
    int value = 0;
    socklen_t len = sizeof value;
    BOOST_TEST(!s.ops()->getsockopt(s.get(), SOL_RDMA, RDMA_IOMAPSIZE, &value, &len));
    BOOST_TEST(value == 128);
    // Zero leaves a socket plain.
    auto plain = open_socket(0);
    BOOST_TEST(plain.ops() == &posix_socket_ops);
    BOOST_TEST(!plain.ops()->getsockopt(plain.get(), SOL_RDMA, RDMA_IOMAPSIZE, &value, &len));
    BOOST_TEST(value == 0);
    const int bad = 40000;
    BOOST_TEST((posix_socket_ops.setsockopt(plain.get(), SOL_RDMA, RDMA_IOMAPSIZE, &bad,
                                            sizeof bad) == boost::asio::error::invalid_argument));
}

BOOST_AUTO_TEST_CASE(iomap_size_after_connect_is_too_late_on_either_table) {
    auto [client, server] = make_pair(1, 1);
    const int one = 1;
    BOOST_TEST((client.ops()->setsockopt(client.get(), SOL_RDMA, RDMA_IOMAPSIZE, &one,
                                         sizeof one) == boost::asio::error::invalid_argument));
    BOOST_TEST((corio::socket_base::iomap_size(2).apply(*server.ops(), server.get()) ==
                corio::error::option_after_connect));
    auto [plain_client, plain_server] = make_pair(0, 0);
    BOOST_TEST((corio::socket_base::iomap_size(2).apply(posix_socket_ops, plain_client.get()) ==
                corio::error::option_after_connect));
}

BOOST_AUTO_TEST_CASE(stream_bytes_and_iowrites_cross_both_ways_in_order) {
    auto [client, server] = make_pair(1, 1);
    BOOST_TEST(client.ops() == &framed_tcp_ops);
    BOOST_TEST(server.ops() == &framed_tcp_ops);
    guarded_region region(8192);
    const off_t at = map(server, region, 0);
    BOOST_TEST(at == 0);

    send_all(client, text("ping"));
    BOOST_TEST((receive_exactly(server, 4) == text("ping")));
    send_all(server, text("pong!"));
    BOOST_TEST((receive_exactly(client, 5) == text("pong!")));

    // Stream bytes, an iowrite, then the notify: the receiver's buffer is
    // full before the iowrite frame, whose bytes land with the next receive,
    // before the byte that follows them is returned.
    const auto data = pattern(5000, 1);
    send_all(client, pattern(10, 2));
    error_code ec;
    BOOST_TEST(client.ops()->iowrite(client.get(), data.data(), data.size(), 1000, {0, 8192}, 0,
                                     ec) == data.size());
    BOOST_TEST(!ec, ec.message());
    send_all(client, text("n"));
    BOOST_TEST((receive_exactly(server, 10) == pattern(10, 2)));
    BOOST_TEST((receive_exactly(server, 1) == text("n")));
    BOOST_TEST(std::equal(data.begin(), data.end(), region.data() + 1000));
    BOOST_TEST(std::all_of(region.data(), region.data() + 1000,
                           [](std::byte b) { return b == std::byte{0}; }));
    BOOST_TEST(region.guards_intact());

    // The sender's guard: beyond the mapping it names, nothing is sent.
    BOOST_TEST(client.ops()->iowrite(client.get(), data.data(), 300, 8000, {0, 8192}, 0, ec) ==
               0u);
    BOOST_TEST((ec == corio::error::iowrite_out_of_bounds));
}

BOOST_AUTO_TEST_CASE(the_wire_carries_a_hello_then_frames_as_documented) {
    // Only the client asks: a plain server sees the framed protocol as bytes.
    auto [client, server] = make_pair(3, 0);
    BOOST_TEST(server.ops() == &posix_socket_ops);
    send_all(client, text("abc"));
    error_code ec;
    const auto payload = pattern(4, 3);
    BOOST_TEST(client.ops()->iowrite(client.get(), payload.data(), 4, 8, {0, 64}, 0, ec) == 4u);
    bytes expected;
    append(expected, frame::encode_hello(3));
    append(expected, frame::encode_header(frame::frame_type::data, 3, 0));
    append(expected, text("abc"));
    append(expected, frame::encode_header(frame::frame_type::iowrite, 4, 8));
    append(expected, payload);
    const auto wire = receive_exactly(server, expected.size());
    BOOST_TEST((wire == expected));
    const bytes start = {std::byte{0x89}, std::byte{'c'}, std::byte{'o'}, std::byte{'r'},
                         std::byte{'i'},  std::byte{'o'}, std::byte{'\r'}, std::byte{'\n'},
                         std::byte{1},    std::byte{0},   std::byte{0},    std::byte{0},
                         std::byte{0},    std::byte{0},   std::byte{0},    std::byte{3}};
    BOOST_TEST(std::equal(start.begin(), start.end(), wire.begin()));

    // The asking side fails at the plain peer's first bytes, and the
    // connection is over for both.
    send_all(server, text("HTTP/1.1 200 OK\r\n"));
    BOOST_TEST((receive_error(client) == corio::error::protocol_error));
    BOOST_TEST((receive_error(client) == corio::error::protocol_error));
    BOOST_TEST(client.ops()->send(client.get(), "x", 1, 0, ec) == 0u);
    BOOST_TEST((ec == corio::error::protocol_error));
    BOOST_TEST((receive_error(server) == boost::asio::error::eof));
}

namespace {

/// A plain client talking to a framed server with an 256-byte mapping at
/// offset 4096: the client writes `frames` after a valid hello.
void expect_refused(const bytes& frames, const error_code& expected) {
    auto [client, server] = make_pair(0, 1);
    guarded_region region(256, std::byte{0});
    BOOST_TEST_REQUIRE(map(server, region, 4096) == 4096);
    bytes wire;
    append(wire, frame::encode_hello(1));
    append(wire, frames);
    send_all(client, wire);
    BOOST_TEST((receive_error(server) == expected));
    BOOST_TEST(std::all_of(region.data(), region.data() + region.size,
                           [](std::byte b) { return b == std::byte{0}; }));
    BOOST_TEST(region.guards_intact());
    // Closed for the peer too, after the server's hello.
    error_code ec;
    while (!(ec = receive_error(client))) {
    }
    BOOST_TEST((ec == boost::asio::error::eof), ec.message());
}

} // namespace

BOOST_AUTO_TEST_CASE(malformed_frames_from_the_peer_end_the_connection_without_a_stray_byte) {
    const error_code protocol_error = corio::error::protocol_error;
    bytes frames;
    append(frames, frame::encode_header(frame::frame_type::iowrite, 16, 4096 - 8));
    append(frames, pattern(16, 4));
    expect_refused(frames, protocol_error); // starts before the mapping

    frames.clear();
    append(frames, frame::encode_header(frame::frame_type::iowrite, 16, 4096 + 250));
    append(frames, pattern(16, 5));
    expect_refused(frames, protocol_error); // crosses its end

    frames.clear();
    append(frames, frame::encode_header(frame::frame_type::iowrite, frame::max_payload + 1, 4096));
    expect_refused(frames, protocol_error); // oversize

    frames.clear();
    auto header = frame::encode_header(frame::frame_type::data, 1, 0);
    header[0] = std::byte{9};
    append(frames, header);
    expect_refused(frames, corio::error::protocol_version_mismatch);

    // A header cut short by the end of the stream.
    auto [client, server] = make_pair(0, 1);
    bytes wire;
    append(wire, frame::encode_hello(1));
    append(wire, bytes(5, std::byte{1}));
    send_all(client, wire);
    BOOST_TEST(!client.ops()->shutdown(client.get(), SHUT_WR));
    BOOST_TEST((receive_error(server) == protocol_error));
}

BOOST_AUTO_TEST_CASE(an_orderly_close_reads_as_end_of_stream) {
    auto [client, server] = make_pair(1, 1);
    send_all(client, text("bye"));
    BOOST_TEST(!client.ops()->shutdown(client.get(), SHUT_WR));
    BOOST_TEST((receive_exactly(server, 3) == text("bye")));
    BOOST_TEST((receive_error(server) == boost::asio::error::eof));
    BOOST_TEST((receive_error(server) == boost::asio::error::eof));
}

BOOST_AUTO_TEST_CASE(partial_writes_and_reads_keep_frames_whole) {
    // Small buffers, a receiver that reads in odd chunks, and a sender that
    // meets would_block and short counts all the time: every stream byte
    // arrives once and in order, every iowrite lands where it was sent.
    auto [client, server] = make_pair(1, 1, 4096);
    constexpr std::size_t window = 64 * 1024;
    guarded_region region(window, std::byte{0});
    BOOST_TEST_REQUIRE(map(server, region, 0) == 0);
    bytes expected_window(window, std::byte{0});
    bytes expected_stream;
    bytes received;

    struct step {
        bool iowrite;
        bytes data;
        std::size_t offset;
    };
    std::vector<step> steps;
    for (unsigned i = 0; i < 40; ++i) {
        steps.push_back({false, pattern(1000 + i * 2111, i), 0});
        const std::size_t len = 100 + (i * 3613) % 30000;
        const std::size_t offset = (i * 7919) % (window - len);
        steps.push_back({true, pattern(len, 100 + i), offset});
    }
    for (const auto& s : steps) {
        if (s.iowrite)
            std::copy(s.data.begin(), s.data.end(), expected_window.begin() + s.offset);
        else
            append(expected_stream, s.data);
    }

    std::size_t index = 0, done = 0, would_blocks = 0, short_counts = 0;
    std::array<std::byte, 777> chunk{};
    const remote_mapping target{0, window};
    while (index < steps.size() || received.size() < expected_stream.size()) {
        if (index < steps.size()) {
            const auto& s = steps[index];
            error_code ec;
            const std::size_t n =
                s.iowrite ? client.ops()->iowrite(client.get(), s.data.data() + done,
                                                  s.data.size() - done,
                                                  static_cast<off_t>(s.offset + done), target, 0, ec)
                          : client.ops()->send(client.get(), s.data.data() + done,
                                               s.data.size() - done, 0, ec);
            if (would_block(ec))
                ++would_blocks;
            else
                BOOST_TEST_REQUIRE(!ec, ec.message());
            if (n > 0 && n < s.data.size() - done)
                ++short_counts;
            done += n;
            if (done == s.data.size()) {
                ++index;
                done = 0;
            }
        }
        error_code ec;
        const std::size_t n = server.ops()->recv(server.get(), chunk.data(), chunk.size(), 0, ec);
        if (!would_block(ec))
            BOOST_TEST_REQUIRE(!ec, ec.message());
        received.insert(received.end(), chunk.begin(), chunk.begin() + static_cast<long>(n));
    }
    // Whatever iowrite bytes came after the last stream byte land with a
    // last receive.
    send_all(client, text("!"));
    BOOST_TEST((receive_exactly(server, 1) == text("!")));
    BOOST_TEST((received == expected_stream));
    BOOST_TEST(std::equal(expected_window.begin(), expected_window.end(), region.data()));
    BOOST_TEST(region.guards_intact());
    BOOST_TEST(would_blocks > 0u);
    BOOST_TEST(short_counts > 0u);
    BOOST_TEST_MESSAGE(would_blocks << " would_block, " << short_counts << " short counts");
}

BOOST_AUTO_TEST_CASE(an_iowrite_waits_for_a_short_stream_write_to_be_finished) {
    // Named, not structured bindings: clang 14 cannot capture those.
    auto sockets = make_pair(1, 1, 4096);
    auto& client = sockets.first;
    auto& server = sockets.second;
    guarded_region region(4096);
    map(server, region, 0);
    // Fill the connection until a write is taken only in part.
    const auto block = pattern(256 * 1024, 7);
    std::size_t sent = 0;
    std::size_t n = 0;
    error_code ec;
    do {
        n = client.ops()->send(client.get(), block.data(), block.size(), 0, ec);
        sent += n;
    } while (!ec && n == block.size());
    BOOST_TEST_REQUIRE(!ec, "the first refused write took nothing: " + ec.message());
    const std::size_t owed = block.size() - n;
    const auto payload = pattern(64, 8);
    BOOST_TEST(client.ops()->iowrite(client.get(), payload.data(), payload.size(), 0, {0, 4096}, 0,
                                     ec) == 0u);
    BOOST_TEST((ec == corio::error::stream_write_unfinished), ec.message());

    // The stream finishes its write (the receiver drains meanwhile); then
    // the iowrite goes, and lands before the notify.
    bytes received;
    const auto* rest_of_block = block.data() + n;
    pump(owed, [&](std::size_t done, error_code& e) {
        return client.ops()->send(client.get(), rest_of_block + done, owed - done, 0, e);
    }, server, received);
    pump(payload.size(), [&](std::size_t done, error_code& e) {
        return client.ops()->iowrite(client.get(), payload.data() + done, payload.size() - done,
                                     static_cast<off_t>(done), {0, 4096}, 0, e);
    }, server, received);
    pump(1, [&](std::size_t, error_code& e) { return client.ops()->send(client.get(), "n", 1, 0, e); },
         server, received);
    const std::size_t total = sent + owed;
    const auto rest = receive_exactly(server, total + 1 - received.size(), 65536);
    received.insert(received.end(), rest.begin(), rest.end());
    BOOST_TEST(received.size() == total + 1);
    BOOST_TEST(std::equal(payload.begin(), payload.end(), region.data()));
    for (std::size_t i = 0; i < total; i += block.size())
        BOOST_TEST(std::equal(block.begin(),
                              block.begin() + static_cast<long>(std::min(block.size(), total - i)),
                              received.begin() + static_cast<long>(i)));
}

BOOST_AUTO_TEST_CASE(an_iowrite_cut_short_is_completed_with_zeros_inside_its_range) {
    // Named, not structured bindings: clang 14 cannot capture those.
    auto sockets = make_pair(1, 1, 4096);
    auto& client = sockets.first;
    auto& server = sockets.second;
    constexpr std::size_t window = 512 * 1024;
    guarded_region region(window, std::byte{0x55});
    map(server, region, 0);
    const auto data = pattern(window, 9);
    error_code ec;
    const std::size_t n =
        client.ops()->iowrite(client.get(), data.data(), data.size(), 0, {0, window}, 0, ec);
    BOOST_TEST_REQUIRE(!ec, ec.message());
    BOOST_TEST_REQUIRE(n < frame::max_payload);
    BOOST_TEST_REQUIRE(n < data.size());
    // The application gives up on the rest (a cancelled async_iowrite) and
    // sends its notify: the frame's missing bytes go out as zeros first.
    bytes received;
    pump(6, [&](std::size_t done, error_code& e) {
        return client.ops()->send(client.get(), &"notify"[done], 6 - done, 0, e);
    }, server, received);
    const auto rest = receive_exactly(server, 6 - received.size());
    received.insert(received.end(), rest.begin(), rest.end());
    BOOST_TEST((received == text("notify")));
    const std::size_t frame_end = std::min<std::size_t>(window, frame::max_payload);
    BOOST_TEST(std::equal(data.begin(), data.begin() + static_cast<long>(n), region.data()));
    BOOST_TEST(std::all_of(region.data() + n, region.data() + frame_end,
                           [](std::byte b) { return b == std::byte{0}; }));
    BOOST_TEST(region.guards_intact());
}

BOOST_AUTO_TEST_CASE(unmapping_retracts_the_region_from_the_peer) {
    auto [client, server] = make_pair(1, 1);
    guarded_region region(1024);
    map(server, region, 0);
    BOOST_TEST(!server.ops()->iounmap(server.get(), region.data(), region.size));
    BOOST_TEST((server.ops()->iounmap(server.get(), region.data(), region.size) ==
                boost::asio::error::invalid_argument));
    const auto data = pattern(100, 10);
    error_code ec;
    BOOST_TEST(client.ops()->iowrite(client.get(), data.data(), data.size(), 0, {0, 1024}, 0,
                                     ec) == data.size());
    BOOST_TEST((receive_error(server) == corio::error::protocol_error));
    BOOST_TEST(std::all_of(region.data(), region.data() + region.size,
                           [](std::byte b) { return b == std::byte{0}; }));
    BOOST_TEST(region.guards_intact());
}

BOOST_AUTO_TEST_CASE(the_mapping_limit_is_the_sockets_iomap_size) {
    auto [client, server] = make_pair(1, 2);
    guarded_region a(64), b(64), c(64);
    map(server, a, 0);
    map(server, b, 64);
    error_code ec;
    BOOST_TEST(server.ops()->iomap(server.get(), c.data(), c.size, PROT_WRITE, 128, ec) == -1);
    BOOST_TEST((ec == boost::asio::error::no_memory));
    BOOST_TEST(client.ops()->iomap(client.get(), a.data(), a.size, PROT_WRITE, 0, ec) == 0);
}
