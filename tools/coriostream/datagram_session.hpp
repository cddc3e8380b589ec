#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

#include "datagram_report.hpp"
#include "options.hpp"

namespace coriostream {

/// udpong's ping-pong over corio::datagram_socket (coriostream --datagram),
/// speaking udpong's protocol so that either end may be rdma-core's udpong:
/// a 16-byte control message (op, client id, sequence number, a reserved
/// byte, a 32-bit big-endian count, 8 bytes of padding) to log in, start and
/// end each test, and data or echo datagrams of the test's size.

/// udpong's smallest datagram: its control message.
inline constexpr std::size_t datagram_control_size = 16;
/// udpong's port.
inline constexpr const char* datagram_default_port = "7174";
/// The largest -S: what datagram rsockets carry (2032 bytes over IPv4),
/// which also fits udpong's 2048-byte message buffer.
inline constexpr std::size_t datagram_largest_size = 2032;

/// One test of a udpong series.
struct datagram_test {
    std::string name;
    std::size_t size;
    std::size_t count;
    bool echo;
};

/// udpong's default series (9 sizes from 64 to 1536 bytes, first each with
/// echo, "_lat", then each without, "_bw"), or its one custom test.
std::vector<datagram_test> make_datagram_plan(const options& opts);

/// Runs the client (with -s) or the server; the server serves until
/// --timeout seconds pass without a datagram (0: forever, as udpong).
/// Throws run_error on failure.
void run_datagram(const options& opts, std::ostream& out);

} // namespace coriostream
