#include "datagram_session.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <optional>
#include <ostream>
#include <thread>

#include <arpa/inet.h>
#include <unistd.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>

#include <corio/datagram_socket.hpp>
#include <corio/socket_base.hpp>
#include <corio/transport.hpp>

#include "progress_meter.hpp"
#include "report.hpp"
#include "run_error.hpp"
#include "write_failure.hpp"

namespace coriostream {

namespace {

using boost::asio::ip::udp;
using std::chrono::milliseconds;

// udpong's message: op, id, seqno, reserved, a big-endian 32-bit count, then
// the payload; control messages are datagram_control_size bytes of it.
enum message_op : std::uint8_t { op_login, op_start, op_data, op_echo, op_end };

struct message {
    std::array<unsigned char, 8 + 2048> bytes{};

    std::uint8_t op() const { return bytes[0]; }
    void set_op(std::uint8_t v) { bytes[0] = v; }
    std::uint8_t id() const { return bytes[1]; }
    void set_id(std::uint8_t v) { bytes[1] = v; }
    std::uint8_t seqno() const { return bytes[2]; }
    void set_seqno(std::uint8_t v) { bytes[2] = v; }
    std::uint32_t data() const {
        std::uint32_t v;
        std::memcpy(&v, &bytes[4], 4);
        return ntohl(v);
    }
    void set_data(std::uint32_t v) {
        v = htonl(v);
        std::memcpy(&bytes[4], &v, 4);
    }
};

// udpong's test_size[] and size_to_count() for its sizes (all below 64 KiB).
constexpr std::array<std::size_t, 9> series_sizes = {64, 128, 192, 256, 384, 512, 768, 1024, 1536};

std::size_t count_for(std::size_t size) { return size >= 1024 ? 10000 : 100000; }

std::string series_name(std::size_t size, const char* suffix) {
    // udpong formats the size into 5 bytes, so "1.5k" at most.
    return format_size(size).substr(0, 4) + suffix;
}

corio::transport transport_of(const options& opts) {
    switch (effective_transport(opts)) {
    case transport_choice::rsocket:
        return corio::transport::rsocket;
    case transport_choice::tcp:
        return corio::transport::udp;
    case transport_choice::automatic:
        break;
    }
    return corio::resolve_datagram_transport(corio::transport::automatic);
}

udp::endpoint resolve(const std::string* host, const std::string& port, bool passive) {
    boost::asio::io_context io;
    udp::resolver resolver(io);
    boost::system::error_code ec;
    const auto flags = passive ? udp::resolver::passive : udp::resolver::flags{};
    const auto results = resolver.resolve(host ? *host : std::string(), port, flags, ec);
    if (ec || results.empty())
        throw run_error("getaddrinfo: " + (host ? *host : std::string("*")) + ":" + port + ": " +
                        (ec ? ec.message() : std::string("no address")));
    return results.begin()->endpoint();
}

// The udpong peer's socket: every wait is bounded by a deadline run on the
// socket's own io_context, since a datagram may never come.
class datagram_peer {
public:
    datagram_peer(const options& opts, const udp& protocol)
        : socket_(io_.get_executor(), transport_of(opts)) {
        boost::system::error_code ec;
        socket_.open(transport_of(opts), protocol, ec);
        if (ec)
            throw run_error("socket: " + ec.message());
        const int buffer = static_cast<int>(opts.buffer_size);
        socket_.set_option(corio::socket_base::send_buffer_size(buffer), ec);
        if (!ec)
            socket_.set_option(corio::socket_base::receive_buffer_size(buffer), ec);
        if (ec)
            throw run_error("setsockopt: " + ec.message());
    }

    corio::datagram_socket& socket() { return socket_; }
    std::string transport() const { return std::string(corio::to_string(socket_.transport())); }

    /// One datagram into `msg` within `timeout` (zero: no limit); empty when
    /// none came. `from` may be null (connected client).
    std::optional<std::size_t> receive(message& msg, std::size_t size, milliseconds timeout,
                                       udp::endpoint* from) {
        std::optional<boost::system::error_code> done;
        std::size_t n = 0;
        auto handler = [&](boost::system::error_code ec, std::size_t k) {
            done = ec;
            n = k;
        };
        const auto buffer = boost::asio::buffer(msg.bytes.data(), size);
        if (from)
            socket_.async_receive_from(buffer, *from, handler);
        else
            socket_.async_receive(buffer, handler);
        io_.restart();
        if (timeout.count() > 0)
            io_.run_for(timeout);
        else
            io_.run_one();
        if (!done) {
            socket_.cancel();
            io_.restart();
            while (!done && io_.run_one() > 0) {
            }
        }
        if (!done || *done == boost::asio::error::operation_aborted)
            return std::nullopt;
        if (*done)
            throw run_error("recvfrom: " + done->message());
        return n;
    }

    void send(const message& msg, std::size_t size, const udp::endpoint* to) {
        boost::system::error_code ec;
        const auto buffer = boost::asio::buffer(msg.bytes.data(), size);
        if (to)
            socket_.send_to(buffer, *to, ec);
        else
            socket_.send(buffer, ec);
        if (ec)
            throw run_error("sendto: " + ec.message());
    }

private:
    boost::asio::io_context io_;
    corio::datagram_socket socket_;
};

// The progress line's timer, on a thread of its own: the client's waits run
// its socket's io_context one operation at a time (run_one, run_for), where
// a timer's handler would end a wait meant for a datagram.
class progress_thread {
public:
    explicit progress_thread(bool enabled)
        : meter_(io_.get_executor(), enabled), work_(io_.get_executor()) {
        if (!enabled)
            return;
        meter_.start();
        thread_ = std::thread([this] { io_.run(); });
    }
    ~progress_thread() {
        meter_.stop();
        work_.reset();
        if (thread_.joinable())
            thread_.join();
    }
    progress_thread(const progress_thread&) = delete;
    progress_thread& operator=(const progress_thread&) = delete;

    progress_meter& meter() { return meter_; }

private:
    boost::asio::io_context io_;
    progress_meter meter_;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
    std::thread thread_;
};

class datagram_client {
public:
    datagram_client(datagram_peer& peer, progress_meter& progress)
        : peer_(peer), progress_(progress) {}

    // udpong's client_send_recv: send, then wait for the answer with this
    // sequence number, sending again whenever `timeout` passes without it.
    // Unlike udpong, a stale answer (to an earlier send) is dropped without
    // sending again: each extra send brings one more stale answer, and on a
    // loaded host udpong's way fed itself into millions of sends.
    // Returns how many times it had to send again.
    std::uint64_t send_recv(std::size_t size, milliseconds timeout) {
        const std::uint8_t sent_seqno = seqno_;
        std::uint64_t retries = 0;
        for (;;) {
            msg_.set_seqno(sent_seqno);
            peer_.send(msg_, size, nullptr);
            std::optional<std::size_t> n;
            do {
                n = peer_.receive(msg_, size, timeout, nullptr);
            } while (n && msg_.seqno() != sent_seqno);
            if (n)
                break;
            if (++retries > give_up_after)
                throw run_error("no answer from the server after " + std::to_string(retries) +
                                " tries");
        }
        ++seqno_;
        return retries;
    }

    void login() {
        msg_.set_op(op_login);
        send_recv(datagram_control_size, milliseconds(1000));
    }

    datagram_result run(const datagram_test& test) {
        datagram_result result{test.name, test.size, test.count, test.echo, 0, 0, {}};
        msg_.set_op(op_start);
        send_recv(datagram_control_size, milliseconds(1000));
        msg_.set_op(test.echo ? op_echo : op_data);
        progress_.begin_row(test.name, test.count);
        const auto start = std::chrono::steady_clock::now();
        for (std::size_t i = 0; i < test.count; ++i) {
            if (test.echo) {
                result.lost += send_recv(test.size, milliseconds(1));
                msg_.set_op(op_echo); // the answer overwrote the message
            } else {
                peer_.send(msg_, test.size, nullptr);
            }
            progress_.add(1);
        }
        msg_.set_op(op_end);
        send_recv(datagram_control_size, milliseconds(1));
        progress_.end_row();
        result.elapsed = std::chrono::duration_cast<std::chrono::microseconds>(
            std::chrono::steady_clock::now() - start);
        const std::uint64_t counted = msg_.data();
        result.transfers = test.echo ? std::uint64_t{test.count} * 2 : counted;
        if (!test.echo)
            result.lost = counted < test.count ? test.count - counted : 0;
        return result;
    }

private:
    // A server that never answers must not keep the client forever.
    static constexpr std::uint64_t give_up_after = 30000;

    datagram_peer& peer_;
    progress_meter& progress_;
    message msg_;
    std::uint8_t seqno_ = 0;
};

void run_client(const options& opts, std::ostream& out) {
    const udp::endpoint server = resolve(&*opts.server_address, opts.port, false);
    datagram_peer peer(opts, server.protocol());
    datagram_report_writer writer(out, opts.format, peer.transport());
    // udpong prints the header before it connects.
    writer.write_header();
    if (opts.bind_address)
        peer.socket().bind(resolve(&*opts.bind_address, "0", true));
    boost::system::error_code ec;
    peer.socket().connect(server, ec);
    if (ec)
        throw run_error("rconnect: " + ec.message());
    // As for streams: a line on stderr for a row that runs longer than 2 s,
    // only when stderr is a terminal.
    progress_thread progress(isatty(STDERR_FILENO) == 1);
    datagram_client client(peer, progress.meter());
    client.login();
    for (const auto& test : make_datagram_plan(opts)) {
        const auto result = client.run(test);
        writer.write(result);
        // udpong's table has no column for it; json and csv have "lost".
        // With echo, "lost" counts sends made again, which may be more than
        // the round trips.
        if (opts.format == output_format::table && result.lost > 0 && result.echo)
            std::cerr << "coriostream: " << result.name << ": " << result.lost
                      << " datagrams sent again over " << result.count << " round trips\n";
        else if (opts.format == output_format::table && result.lost > 0)
            std::cerr << "coriostream: " << result.name << ": " << result.lost << " of "
                      << result.count << " datagrams lost\n";
    }
    writer.failure().throw_if_failed(report_destination(opts));
}

void run_server(const options& opts, std::ostream& out) {
    const udp::endpoint local =
        resolve(opts.bind_address ? &*opts.bind_address : nullptr, opts.port, true);
    datagram_peer peer(opts, local.protocol());
    boost::system::error_code ec;
    peer.socket().bind(local, ec);
    if (ec)
        throw run_error("rbind: " + ec.message());
    // udpong's per-client counts, indexed by the id it hands out at login.
    std::array<std::uint64_t, 256> received{};
    std::uint8_t next_id = 0;
    const auto silence = std::chrono::duration_cast<milliseconds>(opts.timeout);
    message msg;
    write_failure failure;
    for (;;) {
        udp::endpoint from;
        const auto n = peer.receive(msg, msg.bytes.size(), silence, &from);
        if (!n) {
            // --timeout passed without a datagram
            failure.throw_if_failed(report_destination(opts));
            return;
        }
        switch (msg.op()) {
        case op_login:
            out << "client login from " << from.address().to_string() << '\n';
            failure.flush(out);
            msg.set_id(next_id++);
            [[fallthrough]];
        case op_start:
            received[msg.id()] = 0;
            break;
        case op_echo:
            ++received[msg.id()];
            break;
        case op_end:
            msg.set_data(static_cast<std::uint32_t>(received[msg.id()]));
            break;
        default:
            ++received[msg.id()];
            continue;
        }
        peer.send(msg, *n, &from);
    }
}

} // namespace

std::vector<datagram_test> make_datagram_plan(const options& opts) {
    // -T e alone leaves udpong's default series, which sets echo per test.
    if (is_custom_test(opts))
        return {{"custom", opts.transfer_size.value_or(1000), opts.transfer_count.value_or(1000),
                 opts.echo}};
    std::vector<datagram_test> plan;
    for (const std::size_t size : series_sizes)
        plan.push_back({series_name(size, "_lat"), size, count_for(size) / 10, true});
    for (const std::size_t size : series_sizes)
        plan.push_back({series_name(size, "_bw"), size, count_for(size), false});
    return plan;
}

void run_datagram(const options& opts, std::ostream& out) {
    if (is_client(opts))
        run_client(opts, out);
    else
        run_server(opts, out);
}

} // namespace coriostream
