#include "options.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <limits>
#include <ostream>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <boost/program_options.hpp>

#include <corio/network_allow_list.hpp>

#include "datagram_session.hpp"
#include "test_plan.hpp"

namespace coriostream {

namespace po = boost::program_options;

namespace {

// riostream hands -I, -C, -B, -i and -k to the C API as int.
constexpr std::size_t int_max = std::numeric_limits<int>::max();
// More threads than this only queue for the one io_context they share; the
// bound keeps a typo (or 5000000000) from starting threads until the
// system refuses.
constexpr std::size_t max_threads = 1024;
constexpr std::size_t largest_port = 65535;

// riostream compares option words with strncasecmp over the word's length,
// so any argument that starts with the word matches: "blocking", "IPv6".
bool starts_with_ignoring_case(std::string_view text, std::string_view word) {
    if (text.size() < word.size())
        return false;
    for (std::size_t i = 0; i < word.size(); ++i) {
        if (std::tolower(static_cast<unsigned char>(text[i])) !=
            std::tolower(static_cast<unsigned char>(word[i])))
            return false;
    }
    return true;
}

std::string quoted(std::string_view text) {
    return "'" + std::string(text) + "'";
}

// riostream reads numbers with atoi, which turns "abc" into 0 and "12k"
// into 12; coriostream refuses both rather than run a test nobody asked for.
std::size_t parse_number(std::string_view flag, const std::string& text) {
    if (!text.empty() && text.front() == '-')
        throw usage_error(std::string(flag) + " must not be negative, got " + quoted(text));
    std::size_t value = 0;
    const char* const last = text.data() + text.size();
    const auto [end, error] = std::from_chars(text.data(), last, value);
    if (error == std::errc::result_out_of_range)
        throw usage_error(std::string(flag) + " is too large: " + quoted(text));
    if (text.empty() || error != std::errc{} || end != last)
        throw usage_error(std::string(flag) + " needs a whole number, got " + quoted(text));
    return value;
}

template <typename Choice, std::size_t Count>
Choice parse_word(std::string_view flag, const std::string& text,
                  const std::array<std::pair<std::string_view, Choice>, Count>& words) {
    std::string accepted;
    for (const auto& [word, choice] : words) {
        if (text == word)
            return choice;
        accepted += (accepted.empty() ? "" : ", ") + std::string(word);
    }
    throw usage_error(std::string(flag) + " takes one of " + accepted + ", got " + quoted(text));
}

void apply_address_format(options& opts, const std::string& text) {
    // "ipv6" would match "ip" too; riostream treats the two alike, but the
    // engine may want to ask for AF_INET6, so it is told apart first.
    if (starts_with_ignoring_case(text, "ipv6")) {
        opts.host_format = address_format::ipv6;
    } else if (starts_with_ignoring_case(text, "ip")) {
        opts.host_format = address_format::ip;
    } else if (starts_with_ignoring_case(text, "gid")) {
        opts.host_format = address_format::gid;
        opts.rdma_cm_resolve = true;
    } else if (starts_with_ignoring_case(text, "name")) {
        opts.host_format = address_format::name;
    } else {
        throw usage_error("-f takes name, ip, ipv6 or gid, got " + quoted(text));
    }
}

void apply_transfer_size(options& opts, const std::string& text) {
    if (starts_with_ignoring_case(text, "all"))
        opts.all_sizes = true;
    else
        opts.transfer_size = parse_number("-S", text);
}

// rstream's set_test_opt, less f (fork), which has no place in a threaded
// reactor: a single letter is case-sensitive, a word is a case-insensitive
// prefix.
void apply_test_option(options& opts, const std::string& text) {
    if (text.size() == 1) {
        switch (text.front()) {
        case 's':
            opts.kernel_sockets = true;
            return;
        case 'a':
            opts.async = true;
            return;
        case 'b':
            opts.mode = socket_mode::blocking;
            return;
        case 'n':
            opts.mode = socket_mode::nonblocking;
            return;
        case 'r':
            opts.rdma_cm_resolve = true;
            return;
        case 'v':
            opts.verify = true;
            return;
        case 'e':
            opts.echo = true;
            return;
        case 'f':
            throw usage_error("-T f (rstream's fork) is not supported");
        default:
            break;
        }
    } else if (starts_with_ignoring_case(text, "socket")) {
        opts.kernel_sockets = true;
        return;
    } else if (starts_with_ignoring_case(text, "async")) {
        opts.async = true;
        return;
    } else if (starts_with_ignoring_case(text, "block")) {
        opts.mode = socket_mode::blocking;
        return;
    } else if (starts_with_ignoring_case(text, "nonblock")) {
        opts.mode = socket_mode::nonblocking;
        return;
    } else if (starts_with_ignoring_case(text, "resolve")) {
        opts.rdma_cm_resolve = true;
        return;
    } else if (starts_with_ignoring_case(text, "verify")) {
        opts.verify = true;
        return;
    } else if (starts_with_ignoring_case(text, "echo")) {
        opts.echo = true;
        return;
    } else if (starts_with_ignoring_case(text, "fork")) {
        throw usage_error("-T fork (rstream's) is not supported");
    }
    throw usage_error("unknown -T test option " + quoted(text));
}

void check_range(std::string_view flag, std::size_t value, std::size_t lowest,
                 std::size_t highest) {
    if (value < lowest || value > highest)
        throw usage_error(std::string(flag) + " must be between " + std::to_string(lowest) +
                          " and " + std::to_string(highest) + ", got " + std::to_string(value));
}

using option_handler = void (*)(options&, const std::string&);

struct option_rule {
    std::string_view key; ///< as program_options names it: "-s", "streams"
    option_handler apply;
};

const option_rule option_rules[] = {
    {"-s", [](options& o, const std::string& v) { o.server_address = v; }},
    {"-b", [](options& o, const std::string& v) { o.bind_address = v; }},
    {"-f", apply_address_format},
    {"-B",
     [](options& o, const std::string& v) {
         // riostream reads -B 0 as "not given" and keeps its 512 KiB.
         const auto size = parse_number("-B", v);
         o.buffer_size = size == 0 ? default_buffer_size : size;
     }},
    {"-i", [](options& o, const std::string& v) { o.inline_size = parse_number("-i", v); }},
    {"-I", [](options& o, const std::string& v) { o.iterations = parse_number("-I", v); }},
    {"-C", [](options& o, const std::string& v) { o.transfer_count = parse_number("-C", v); }},
    {"-S", apply_transfer_size},
    {"-p",
     [](options& o, const std::string& v) {
         o.port = v;
         o.port_given = true;
     }},
    {"-k", [](options& o, const std::string& v) { o.keepalive_seconds = parse_number("-k", v); }},
    {"-T", apply_test_option},
    {"help", [](options& o, const std::string&) { o.help = true; }},
    {"dry-run", [](options& o, const std::string&) { o.dry_run = true; }},
    {"transport",
     [](options& o, const std::string& v) {
         o.transport = parse_word("--transport", v,
                                  std::array<std::pair<std::string_view, transport_choice>, 3>{{
                                      {"auto", transport_choice::automatic},
                                      {"rsocket", transport_choice::rsocket},
                                      {"tcp", transport_choice::tcp},
                                  }});
     }},
    {"data-path",
     [](options& o, const std::string& v) {
         o.data_path = parse_word("--data-path", v,
                                  std::array<std::pair<std::string_view, data_path_kind>, 2>{{
                                      {"iomap", data_path_kind::iomap},
                                      {"stream", data_path_kind::stream},
                                  }});
     }},
    {"notify",
     [](options& o, const std::string& v) {
         o.notify = parse_word("--notify", v,
                               std::array<std::pair<std::string_view, notify_method>, 2>{{
                                   {"marker", notify_method::marker},
                                   {"message", notify_method::message},
                               }});
     }},
    {"loopback", [](options& o, const std::string&) { o.loopback = true; }},
    {"datagram",
     [](options& o, const std::string&) {
         o.datagram = true;
         if (!o.port_given)
             o.port = datagram_default_port;
     }},
    {"streams", [](options& o, const std::string& v) { o.streams = parse_number("--streams", v); }},
    {"threads", [](options& o, const std::string& v) { o.threads = parse_number("--threads", v); }},
    {"format",
     [](options& o, const std::string& v) {
         o.format = parse_word("--format", v,
                               std::array<std::pair<std::string_view, output_format>, 3>{{
                                   {"table", output_format::table},
                                   {"json", output_format::json},
                                   {"csv", output_format::csv},
                               }});
     }},
    {"output", [](options& o, const std::string& v) { o.output_file = v; }},
    {"timeout",
     [](options& o, const std::string& v) {
         const auto seconds = parse_number("--timeout", v);
         // Beyond int, a chrono count could wrap negative.
         check_range("--timeout", seconds, 0, int_max);
         o.timeout = std::chrono::seconds(seconds);
     }},
    {"allow", [](options& o, const std::string& v) { o.allow.push_back(v); }},
    {"max-streams",
     [](options& o, const std::string& v) { o.max_streams = parse_number("--max-streams", v); }},
    {"spin-budget",
     [](options& o, const std::string& v) {
         const auto micros = parse_number("--spin-budget", v);
         // A second of spinning before each wait is no longer adaptive.
         check_range("--spin-budget", micros, 0, 1000000);
         o.spin_budget = std::chrono::microseconds(micros);
     }},
    {"poll-mode",
     [](options& o, const std::string& v) {
         o.polling = parse_word("--poll-mode", v,
                                std::array<std::pair<std::string_view, poll_mode>, 3>{{
                                    {"thread", poll_mode::thread},
                                    {"busy", poll_mode::busy},
                                    {"adaptive", poll_mode::adaptive},
                                }});
     }},
};

po::options_description riostream_flags() {
    // Described only to the parser: the usage text prints riostream's own
    // block for these.
    po::options_description flags;
    for (const char* flag : {",s", ",b", ",f", ",B", ",i", ",I", ",C", ",S", ",p", ",k", ",T"})
        flags.add_options()(flag, po::value<std::string>());
    return flags;
}

po::options_description extension_options() {
    po::options_description extensions("Extensions (long options only)");
    // clang-format off
    extensions.add_options()
        ("help", "show this text and exit")
        ("dry-run", "print the tests the plan would run, then exit")
        ("transport", po::value<std::string>()->value_name("auto|rsocket|tcp"),
         "auto (default) picks rsocket where an RDMA device exists, else tcp; -T s means tcp")
        ("data-path", po::value<std::string>()->value_name("iomap|stream"),
         "iomap (default): riostream's riowrite into the peer's riomap; "
         "stream: rstream's rsend/rrecv copy")
        ("notify", po::value<std::string>()->value_name("marker|message"),
         "how an iomap receiver learns a transfer landed: marker (default) spins on the "
         "buffer's last byte, as riostream; message sends a notice through the stream")
        ("datagram", "udpong's ping-pong over datagram sockets (-s, -b, -B, -C, -S, -p, "
                     "-T s|a|b|n|e; port 7174), interoperating with udpong")
        ("loopback", "run server and client in this process; the client dials -b "
                     "(127.0.0.1 without it); -s is refused")
        ("streams", po::value<std::string>()->value_name("N"),
         "connections to run side by side (default 1)")
        ("threads", po::value<std::string>()->value_name("M"),
         "threads running the I/O (default 1, at most 1024)")
        ("format", po::value<std::string>()->value_name("table|json|csv"),
         "table (default) is riostream's; json is one object per line")
        ("output", po::value<std::string>()->value_name("FILE"),
         "write the report to FILE instead of standard output")
        ("timeout", po::value<std::string>()->value_name("SECONDS"),
         "give up waiting for the peer after SECONDS (default 30; 0 waits forever)")
        ("poll-mode", po::value<std::string>()->value_name("thread|busy|adaptive"),
         "thread waits in corio's rpoll thread; busy spins on rpoll with timeout 0; "
         "adaptive spins on the waiting rsocket for corio's spin budget, then waits in "
         "the thread (default: thread with -T b, else busy, as riostream spins)")
        ("spin-budget", po::value<std::string>()->value_name("MICROSECONDS"),
         "with --poll-mode adaptive: the longest a wait spins before it sleeps (default 100; "
         "0 sleeps at once), but for one spin of 4 budgets when an idle connection's answers "
         "turn prompt again")
        ("allow", po::value<std::string>()->value_name("CIDR"),
         "server: admit only peers in this network (repeatable; IPv4 or IPv6, e.g. "
         "10.0.0.0/8); others are closed at once")
        ("max-streams", po::value<std::string>()->value_name("N"),
         "server: refuse connections beyond N open at once");
    // clang-format on
    return extensions;
}

// program_options names a known short-only option "--s" when its value is
// missing; an unknown "--s" must keep its two dashes.
std::string readable(const po::error& error) {
    std::string message = error.what();
    if (dynamic_cast<const po::invalid_command_line_syntax*>(&error) == nullptr)
        return message;
    for (auto at = message.find("'--"); at != std::string::npos; at = message.find("'--", at + 1)) {
        if (at + 4 < message.size() && message[at + 4] == '\'')
            message.erase(at + 1, 1);
    }
    return message;
}

bool fits_in_signed_64_bits(std::size_t iterations, std::size_t transfer_count,
                            std::size_t transfer_size) {
    constexpr std::uint64_t limit = std::numeric_limits<std::int64_t>::max();
    // Both directions: the factor 2 of riostream's total.
    std::uint64_t product = 2;
    for (const std::uint64_t factor : {iterations, transfer_count, transfer_size}) {
        if (factor != 0 && product > limit / factor)
            return false;
        product *= factor;
    }
    return true;
}

bool is_all_digits(std::string_view text) {
    for (const char c : text) {
        if (std::isdigit(static_cast<unsigned char>(c)) == 0)
            return false;
    }
    return true;
}

// udpong's flags are a subset of riostream's; the others have no meaning for
// its protocol and are refused rather than ignored.
void validate_datagram(const options& opts) {
    if (opts.transfer_size)
        check_range("-S", *opts.transfer_size, datagram_control_size, datagram_largest_size);
    if (opts.iterations || opts.all_sizes || opts.verify || opts.rdma_cm_resolve ||
        opts.keepalive_seconds != 0)
        throw usage_error("--datagram takes udpong's flags only: not -I, -S all, -T v, -T r or -k");
    if (opts.loopback || opts.streams != 1 || opts.threads != 1)
        throw usage_error("--datagram runs one socket: no --loopback, --streams or --threads");
}

} // namespace

options parse_options(int argc, const char* const argv[]) {
    po::options_description described;
    described.add(riostream_flags()).add(extension_options());
    // No guessing: "--str" must not quietly mean --streams.
    const int style = po::command_line_style::unix_style & ~po::command_line_style::allow_guessing;

    std::vector<po::option> given;
    try {
        given = po::command_line_parser(argc, argv).options(described).style(style).run().options;
    } catch (const po::error& error) {
        throw usage_error(readable(error));
    }

    options opts;
    for (const auto& option : given) {
        const std::string value = option.value.empty() ? std::string() : option.value.front();
        if (option.position_key >= 0)
            throw usage_error("unexpected argument " + quoted(value));
        for (const auto& rule : option_rules) {
            if (rule.key == option.string_key) {
                rule.apply(opts, value);
                break;
            }
        }
    }
    return opts;
}

void validate(const options& opts) {
    if (opts.server_address && opts.server_address->empty())
        throw usage_error("-s needs a server address");
    if (opts.bind_address && opts.bind_address->empty())
        throw usage_error("-b needs a bind address");
    if (opts.port.empty())
        throw usage_error("-p needs a port");
    if (is_all_digits(opts.port))
        check_range("-p", parse_number("-p", opts.port), 1, largest_port);

    if (opts.iterations)
        check_range("-I", *opts.iterations, 1, int_max);
    if (opts.transfer_count)
        check_range("-C", *opts.transfer_count, 1, int_max);
    if (opts.datagram)
        validate_datagram(opts);
    else if (opts.echo)
        throw usage_error("-T e is udpong's: it needs --datagram");
    if (opts.transfer_size && !opts.datagram)
        check_range("-S", *opts.transfer_size, 1, largest_table_size());
    if (is_custom_test(opts) &&
        !fits_in_signed_64_bits(opts.iterations.value_or(custom_default_iterations),
                                opts.transfer_count.value_or(custom_default_transfer_count),
                                opts.transfer_size.value_or(custom_default_transfer_size)))
        throw usage_error("-I, -C and -S together move more than 2^63 bytes");
    check_range("-B", opts.buffer_size, 1, int_max);
    check_range("-i", opts.inline_size, 0, int_max);
    check_range("-k", opts.keepalive_seconds, 0, int_max);

    if (opts.streams == 0)
        throw usage_error("--streams must be at least 1");
    if (opts.threads == 0)
        throw usage_error("--threads must be at least 1");
    check_range("--threads", opts.threads, 1, max_threads);
    if (opts.output_file && opts.output_file->empty())
        throw usage_error("--output needs a file name");

    for (const auto& network : opts.allow) {
        boost::system::error_code ec;
        corio::network_allow_list().add(network, ec);
        if (ec)
            throw usage_error("--allow takes a network as address[/prefix], got " +
                              quoted(network));
    }
    if (opts.max_streams && *opts.max_streams == 0)
        throw usage_error("--max-streams must be at least 1");
    if (opts.server_address && (!opts.allow.empty() || opts.max_streams))
        throw usage_error("--allow and --max-streams limit a server; -s makes this the client");
    if (opts.loopback && opts.server_address)
        throw usage_error("--loopback runs both ends here; -s names a remote server");
    if (opts.kernel_sockets && opts.transport == transport_choice::rsocket)
        throw usage_error("-T s asks for kernel sockets, --transport rsocket for rsockets");
    if (opts.host_format == address_format::gid &&
        effective_transport(opts) == transport_choice::tcp)
        throw usage_error("-f gid needs rsockets; kernel TCP has no AF_IB");
}

void print_usage(std::ostream& out, std::string_view program_name) {
    out << "usage: " << program_name << "\n"
        << "\t[-s server_address]\n"
        << "\t[-b bind_address]\n"
        << "\t[-f address_format]\n"
        << "\t    name, ip, ipv6, or gid\n"
        << "\t[-B buffer_size]\n"
        << "\t[-i inline_size]\n"
        << "\t[-I iterations]\n"
        << "\t[-C transfer_count]\n"
        << "\t[-S transfer_size or all]\n"
        << "\t[-p port_number]\n"
        << "\t[-k keepalive_time]\n"
        << "\t[-T test_option]\n"
        << "\t    s|sockets - use standard tcp/ip sockets\n"
        << "\t    a|async - asynchronous operation (use poll)\n"
        << "\t    b|blocking - use blocking calls\n"
        << "\t    n|nonblocking - use nonblocking calls\n"
        << "\t    r|resolve - use rdma cm to resolve address\n"
        << "\t    v|verify - verify data\n"
        << "\n";
    // program_options pads wrapped description lines with trailing blanks.
    std::ostringstream described;
    described << extension_options();
    std::istringstream lines(described.str());
    for (std::string line; std::getline(lines, line);)
        out << line.substr(0, line.find_last_not_of(' ') + 1) << '\n';
}

bool is_client(const options& opts) {
    return opts.server_address.has_value();
}

bool is_custom_test(const options& opts) {
    return opts.iterations || opts.transfer_count || opts.transfer_size;
}

std::string report_destination(const options& opts) {
    return opts.output_file ? *opts.output_file : "standard output";
}

transport_choice effective_transport(const options& opts) {
    return opts.kernel_sockets ? transport_choice::tcp : opts.transport;
}

std::string_view to_string(address_format value) {
    switch (value) {
    case address_format::name:
        return "name";
    case address_format::ip:
        return "ip";
    case address_format::ipv6:
        return "ipv6";
    case address_format::gid:
        return "gid";
    }
    return "unknown";
}

std::string_view to_string(socket_mode value) {
    return value == socket_mode::blocking ? "blocking" : "nonblocking";
}

std::string_view to_string(transport_choice value) {
    switch (value) {
    case transport_choice::automatic:
        return "auto";
    case transport_choice::rsocket:
        return "rsocket";
    case transport_choice::tcp:
        return "tcp";
    }
    return "unknown";
}

std::string_view to_string(data_path_kind value) {
    return value == data_path_kind::stream ? "stream" : "iomap";
}

std::string_view to_string(notify_method value) {
    return value == notify_method::message ? "message" : "marker";
}

std::string_view to_string(output_format value) {
    switch (value) {
    case output_format::table:
        return "table";
    case output_format::json:
        return "json";
    case output_format::csv:
        return "csv";
    }
    return "unknown";
}

std::string_view to_string(poll_mode value) {
    return value == poll_mode::busy ? "busy" : value == poll_mode::thread ? "thread" : "adaptive";
}

} // namespace coriostream
