#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>

#include "options.hpp"
#include "write_failure.hpp"

namespace coriostream {

/// One finished udpong test, as the client measured it.
struct datagram_result {
    std::string name;          ///< udpong's: "64_lat", "1.5k_bw", or "custom"
    std::size_t size = 0;      ///< bytes per datagram
    std::size_t count = 0;     ///< datagrams (or round trips, with echo) the client sent
    bool echo = false;
    /// What the table calls transfers: 2 per round trip with echo; without,
    /// the datagrams the server counted (its reply to msg_op_end).
    std::uint64_t transfers = 0;
    /// Without echo, datagrams the server did not count; with echo, round
    /// trips the client had to send again after 1 ms without an answer.
    std::uint64_t lost = 0;
    std::chrono::microseconds elapsed{};
};

/// udpong's header line, without the newline: riostream's less "iters".
std::string datagram_table_header();
/// A row as udpong's show_perf prints it, without the newline, with its
/// arithmetic in single precision.
std::string datagram_table_row(const datagram_result& result);

/// Writes udpong's table, or json (one object per line) or csv with the
/// lost datagrams and the transport as well.
class datagram_report_writer {
public:
    datagram_report_writer(std::ostream& out, output_format format, std::string transport);
    void write_header();
    void write(const datagram_result& result);

    /// Whether every flush so far reached the stream.
    const write_failure& failure() const noexcept { return failure_; }

private:
    std::ostream& out_;
    output_format format_;
    std::string transport_;
    bool header_written_ = false;
    write_failure failure_;
};

} // namespace coriostream
