#pragma once

#include <chrono>
#include <cstddef>
#include <iosfwd>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace coriostream {

/// -f: how -s and -b name a host.
enum class address_format { name, ip, ipv6, gid };

/// -T b and -T n. riostream keeps one flag word for both, so whichever comes
/// last wins; nonblocking is its default.
enum class socket_mode { nonblocking, blocking };

/// --transport. -T s (rstream's kernel sockets) asks for tcp as well.
enum class transport_choice { automatic, rsocket, tcp };

/// --data-path: riostream's riowrite into the peer's riomap-ed buffer, or
/// rstream's copy through rsend/rrecv.
enum class data_path_kind { iomap, stream };

/// --notify: how the receiver of an iomap transfer learns that it landed.
/// marker is riostream's: it spins on the buffer's last byte.
enum class notify_method { marker, message };

enum class output_format { table, json, csv };

/// --poll-mode: how corio waits for readiness. thread is corio's rpoll
/// service thread, which sleeps in rpoll as riostream's -T b sleeps in its
/// calls; busy spins on rpoll with timeout 0, as riostream's default (-T n)
/// spins on EAGAIN and its -T a on rpoll with timeout 0; adaptive polls the
/// waiting rsocket with timeout 0 for corio's spin budget, then sleeps in
/// the poller thread (no riostream letter: --poll-mode only).
enum class poll_mode { thread, busy, adaptive };

/// riostream sets SO_SNDBUF and SO_RCVBUF to this unless -B says otherwise.
inline constexpr std::size_t default_buffer_size = std::size_t{1} << 19;
inline constexpr std::size_t default_inline_size = 64;
inline constexpr std::chrono::seconds default_timeout{30};

/// Everything the command line says, as given; validate() judges it.
struct options {
    // riostream's flags.
    std::optional<std::string> server_address; ///< -s: present makes this process the client
    std::optional<std::string> bind_address;   ///< -b
    address_format host_format = address_format::name;
    std::size_t buffer_size = default_buffer_size; ///< -B; riostream reads -B 0 as "not given"
    std::size_t inline_size = default_inline_size; ///< -i: the latency series only
    std::optional<std::size_t> iterations;         ///< -I
    std::optional<std::size_t> transfer_count;     ///< -C
    std::optional<std::size_t> transfer_size;      ///< -S n
    bool all_sizes = false;                        ///< -S all; ignored by a custom test
    std::string port = "7471";                     ///< -p: a number or a service name
    bool port_given = false;                       ///< -p was on the command line
    socket_mode mode = socket_mode::nonblocking;   ///< -T b, -T n
    bool async = false;                            ///< -T a: wait in rpoll before each call
    bool verify = false;                           ///< -T v
    bool echo = false;                             ///< -T e: udpong's echo (--datagram only)

    // rstream's flags.
    std::size_t keepalive_seconds = 0; ///< -k: TCP_KEEPIDLE; 0 leaves keepalive off
    bool kernel_sockets = false;       ///< -T s
    bool rdma_cm_resolve = false;      ///< -T r, and -f gid: resolve with rdma_getaddrinfo

    // Extensions, long options only.
    bool help = false;
    bool dry_run = false;
    transport_choice transport = transport_choice::automatic;
    /// --data-path and --notify when given; settle_run_settings chooses
    /// otherwise (iomap and marker where the transport allows).
    std::optional<data_path_kind> data_path;
    std::optional<notify_method> notify;
    /// Both ends in this process. -b still names what the server binds and
    /// the client dials it (127.0.0.1 without -b); -s is refused.
    bool loopback = false;
    std::size_t streams = 1;
    std::size_t threads = 1;
    output_format format = output_format::table;
    std::optional<std::string> output_file;
    /// How long to wait for the peer before giving up; zero waits forever,
    /// as riostream does.
    std::chrono::seconds timeout = default_timeout;
    /// --poll-mode when given; otherwise settle_run_settings follows -T b/n.
    std::optional<poll_mode> polling;
    /// --spin-budget, when given: the adaptive spin's budget (needs
    /// --poll-mode adaptive).
    std::optional<std::chrono::microseconds> spin_budget;
    /// --datagram: udpong's protocol and table over datagram sockets
    /// (tools/coriostream/datagram_session.hpp); -p defaults to 7174.
    bool datagram = false;
    /// --allow, repeatable: the networks (CIDR) the server admits; empty
    /// admits every peer, as riostream does.
    std::vector<std::string> allow;
    /// --max-streams: the most connections the server has open at once.
    std::optional<std::size_t> max_streams;
};

/// A command line that cannot run. main prints the message and the usage
/// text and exits 1, as riostream does for a bad -T.
class usage_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Reads argv in order, as riostream's getopt loop does, so the last of
/// repeated flags wins. Throws usage_error for what cannot even be read:
/// unknown options, missing or non-numeric values, unknown words.
options parse_options(int argc, const char* const argv[]);

/// Throws usage_error for values that read fine but cannot run: zero counts,
/// sizes outside riostream's table, conflicting choices.
void validate(const options& opts);

/// riostream's usage text (with rstream's -k, -T s and -T r) followed by the
/// long options.
void print_usage(std::ostream& out, std::string_view program_name);

bool is_client(const options& opts);
/// -I, -C or -S n turn the default series into one custom test.
bool is_custom_test(const options& opts);
/// Where the report goes, as an error names it: the --output file, or
/// "standard output".
std::string report_destination(const options& opts);
/// --transport, with -T s read as tcp.
transport_choice effective_transport(const options& opts);

std::string_view to_string(address_format value);
std::string_view to_string(socket_mode value);
std::string_view to_string(transport_choice value);
std::string_view to_string(data_path_kind value);
std::string_view to_string(notify_method value);
std::string_view to_string(output_format value);
std::string_view to_string(poll_mode value);

} // namespace coriostream
