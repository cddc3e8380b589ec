#define BOOST_TEST_MODULE options
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include <coriostream/options.hpp>

using coriostream::address_format;
using coriostream::data_path_kind;
using coriostream::notify_method;
using coriostream::options;
using coriostream::output_format;
using coriostream::poll_mode;
using coriostream::socket_mode;
using coriostream::transport_choice;
using coriostream::usage_error;

namespace {

options parse(std::initializer_list<const char*> arguments) {
    std::vector<const char*> argv{"coriostream"};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    return coriostream::parse_options(static_cast<int>(argv.size()), argv.data());
}

options parse_and_validate(std::initializer_list<const char*> arguments) {
    auto opts = parse(arguments);
    coriostream::validate(opts);
    return opts;
}

// The usage_error's message, or "" when the arguments are accepted.
std::string refusal(std::initializer_list<const char*> arguments) {
    try {
        parse_and_validate(arguments);
    } catch (const usage_error& error) {
        return error.what();
    }
    return "";
}

bool mentions(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

} // namespace

BOOST_AUTO_TEST_CASE(no_arguments_give_riostreams_defaults) {
    const auto opts = parse_and_validate({});
    BOOST_TEST(!coriostream::is_client(opts));
    BOOST_TEST(!opts.bind_address.has_value());
    BOOST_TEST((opts.host_format == address_format::name));
    BOOST_TEST(opts.buffer_size == 524288U);
    BOOST_TEST(opts.inline_size == 64U);
    BOOST_TEST(!coriostream::is_custom_test(opts));
    BOOST_TEST(!opts.all_sizes);
    BOOST_TEST(opts.port == "7471");
    BOOST_TEST((opts.mode == socket_mode::nonblocking));
    BOOST_TEST(!opts.async);
    BOOST_TEST(!opts.verify);
    BOOST_TEST(opts.keepalive_seconds == 0U);
    BOOST_TEST(!opts.kernel_sockets);
    BOOST_TEST(!opts.rdma_cm_resolve);
}

BOOST_AUTO_TEST_CASE(no_arguments_give_the_extensions_defaults) {
    const auto opts = parse_and_validate({});
    BOOST_TEST(!opts.help);
    BOOST_TEST(!opts.dry_run);
    BOOST_TEST((opts.transport == transport_choice::automatic));
    BOOST_TEST(!opts.data_path.has_value());
    BOOST_TEST(!opts.notify.has_value());
    BOOST_TEST(!opts.loopback);
    BOOST_TEST(opts.streams == 1U);
    BOOST_TEST(opts.threads == 1U);
    BOOST_TEST((opts.format == output_format::table));
    BOOST_TEST(!opts.output_file.has_value());
    BOOST_TEST((opts.timeout == std::chrono::seconds(30)));
    BOOST_TEST(!opts.polling.has_value());
}

BOOST_AUTO_TEST_CASE(server_and_bind_addresses) {
    const auto opts = parse_and_validate({"-s", "10.0.0.1", "-b", "10.0.0.2"});
    BOOST_TEST(coriostream::is_client(opts));
    BOOST_TEST(*opts.server_address == "10.0.0.1");
    BOOST_TEST(*opts.bind_address == "10.0.0.2");
}

BOOST_AUTO_TEST_CASE(values_may_stick_to_their_flag_as_with_getopt) {
    const auto opts = parse_and_validate({"-shost", "-p7000", "-Tb"});
    BOOST_TEST(*opts.server_address == "host");
    BOOST_TEST(opts.port == "7000");
    BOOST_TEST((opts.mode == socket_mode::blocking));
}

BOOST_AUTO_TEST_CASE(the_last_of_a_repeated_flag_wins_as_with_getopt) {
    const auto opts = parse_and_validate({"-s", "first", "-s", "second", "-I", "3", "-I", "4"});
    BOOST_TEST(*opts.server_address == "second");
    BOOST_TEST(*opts.iterations == 4U);
}

BOOST_AUTO_TEST_CASE(address_formats_match_by_prefix_ignoring_case) {
    BOOST_TEST((parse({"-f", "name"}).host_format == address_format::name));
    BOOST_TEST((parse({"-f", "ip"}).host_format == address_format::ip));
    BOOST_TEST((parse({"-f", "IP"}).host_format == address_format::ip));
    BOOST_TEST((parse({"-f", "ipv6"}).host_format == address_format::ipv6));
    BOOST_TEST((parse({"-f", "IPv6"}).host_format == address_format::ipv6));
    BOOST_TEST((parse({"-f", "ipv4"}).host_format == address_format::ip));
    BOOST_TEST((parse({"-f", "gid"}).host_format == address_format::gid));
}

BOOST_AUTO_TEST_CASE(gid_format_resolves_through_rdma_cm) {
    BOOST_TEST(parse({"-f", "gid"}).rdma_cm_resolve);
    BOOST_TEST(!parse({"-f", "ip"}).rdma_cm_resolve);
}

BOOST_AUTO_TEST_CASE(unknown_address_format_is_refused) {
    BOOST_TEST(mentions(refusal({"-f", "mac"}), "-f takes name, ip, ipv6 or gid"));
    // strncasecmp over two characters: "i" alone is not "ip".
    BOOST_TEST(mentions(refusal({"-f", "i"}), "-f"));
}

BOOST_AUTO_TEST_CASE(buffer_and_inline_sizes) {
    const auto opts = parse_and_validate({"-B", "1048576", "-i", "0"});
    BOOST_TEST(opts.buffer_size == 1048576U);
    BOOST_TEST(opts.inline_size == 0U);
}

BOOST_AUTO_TEST_CASE(buffer_size_zero_means_riostreams_default) {
    BOOST_TEST(parse_and_validate({"-B", "0"}).buffer_size == 524288U);
}

BOOST_AUTO_TEST_CASE(iterations_count_and_size_make_a_custom_test) {
    const auto opts = parse_and_validate({"-I", "10", "-C", "20", "-S", "4096"});
    BOOST_TEST(coriostream::is_custom_test(opts));
    BOOST_TEST(*opts.iterations == 10U);
    BOOST_TEST(*opts.transfer_count == 20U);
    BOOST_TEST(*opts.transfer_size == 4096U);
    BOOST_TEST(coriostream::is_custom_test(parse({"-I", "1"})));
    BOOST_TEST(coriostream::is_custom_test(parse({"-C", "1"})));
    BOOST_TEST(coriostream::is_custom_test(parse({"-S", "1"})));
}

BOOST_AUTO_TEST_CASE(size_all_matches_by_prefix_and_is_no_custom_test) {
    for (const char* word : {"all", "ALL", "allsizes"}) {
        const auto opts = parse_and_validate({"-S", word});
        BOOST_TEST(opts.all_sizes);
        BOOST_TEST(!coriostream::is_custom_test(opts));
    }
}

BOOST_AUTO_TEST_CASE(size_all_does_not_undo_a_size_given_before) {
    const auto opts = parse_and_validate({"-S", "100", "-S", "all"});
    BOOST_TEST(opts.all_sizes);
    BOOST_TEST(coriostream::is_custom_test(opts));
    BOOST_TEST(*opts.transfer_size == 100U);
}

BOOST_AUTO_TEST_CASE(port_may_be_a_number_or_a_service_name) {
    BOOST_TEST(parse_and_validate({"-p", "18515"}).port == "18515");
    BOOST_TEST(parse_and_validate({"-p", "http"}).port == "http");
}

BOOST_AUTO_TEST_CASE(keepalive_from_rstream) {
    BOOST_TEST(parse_and_validate({"-k", "60"}).keepalive_seconds == 60U);
}

BOOST_AUTO_TEST_CASE(test_option_letters) {
    BOOST_TEST(parse({"-T", "a"}).async);
    BOOST_TEST((parse({"-T", "b"}).mode == socket_mode::blocking));
    BOOST_TEST((parse({"-T", "n"}).mode == socket_mode::nonblocking));
    BOOST_TEST(parse({"-T", "v"}).verify);
    BOOST_TEST(parse({"-T", "s"}).kernel_sockets);
    BOOST_TEST(parse({"-T", "r"}).rdma_cm_resolve);
}

BOOST_AUTO_TEST_CASE(test_option_words_match_by_prefix_ignoring_case) {
    BOOST_TEST(parse({"-T", "async"}).async);
    BOOST_TEST(parse({"-T", "ASYNC"}).async);
    BOOST_TEST((parse({"-T", "block"}).mode == socket_mode::blocking));
    BOOST_TEST((parse({"-T", "blocking"}).mode == socket_mode::blocking));
    BOOST_TEST((parse({"-T", "b", "-T", "nonblocking"}).mode == socket_mode::nonblocking));
    BOOST_TEST(parse({"-T", "verify"}).verify);
    BOOST_TEST(parse({"-T", "sockets"}).kernel_sockets);
    BOOST_TEST(parse({"-T", "resolve"}).rdma_cm_resolve);
}

BOOST_AUTO_TEST_CASE(test_options_accumulate_and_the_last_mode_wins) {
    const auto opts = parse_and_validate({"-T", "a", "-T", "v", "-T", "n", "-T", "b"});
    BOOST_TEST(opts.async);
    BOOST_TEST(opts.verify);
    BOOST_TEST((opts.mode == socket_mode::blocking));
    BOOST_TEST((parse({"-T", "b", "-T", "n"}).mode == socket_mode::nonblocking));
}

BOOST_AUTO_TEST_CASE(unknown_test_option_is_a_usage_error) {
    BOOST_TEST(refusal({"-T", "x"}) == "unknown -T test option 'x'");
    // Single letters are case-sensitive in riostream; words are not.
    BOOST_TEST(refusal({"-T", "A"}) == "unknown -T test option 'A'");
    BOOST_TEST(refusal({"-T", "ab"}) == "unknown -T test option 'ab'");
    BOOST_TEST(refusal({"-T", "bl"}) == "unknown -T test option 'bl'");
    BOOST_TEST(refusal({"-T", ""}) == "unknown -T test option ''");
}

BOOST_AUTO_TEST_CASE(rstreams_fork_is_refused) {
    BOOST_TEST(mentions(refusal({"-T", "f"}), "not supported"));
    BOOST_TEST(mentions(refusal({"-T", "fork"}), "not supported"));
}

BOOST_AUTO_TEST_CASE(long_options_set_the_extensions) {
    const auto opts = parse_and_validate({"--transport", "rsocket", "--data-path", "stream",
                                          "--notify", "message", "--streams", "4", "--threads", "2",
                                          "--format", "json", "--output", "out.json", "--timeout",
                                          "5", "--poll-mode", "busy", "--dry-run"});
    BOOST_TEST((opts.transport == transport_choice::rsocket));
    BOOST_TEST((opts.data_path == data_path_kind::stream));
    BOOST_TEST((opts.notify == notify_method::message));
    BOOST_TEST(opts.streams == 4U);
    BOOST_TEST(opts.threads == 2U);
    BOOST_TEST((opts.format == output_format::json));
    BOOST_TEST(*opts.output_file == "out.json");
    BOOST_TEST((opts.timeout == std::chrono::seconds(5)));
    BOOST_TEST((opts.polling == poll_mode::busy));
    BOOST_TEST(opts.dry_run);
}

BOOST_AUTO_TEST_CASE(long_options_take_their_value_after_an_equals_sign) {
    const auto opts = parse_and_validate({"--transport=tcp", "--format=csv", "--loopback"});
    BOOST_TEST((opts.transport == transport_choice::tcp));
    BOOST_TEST((opts.format == output_format::csv));
    BOOST_TEST(opts.loopback);
}

BOOST_AUTO_TEST_CASE(help_is_recorded) {
    BOOST_TEST(parse({"--help"}).help);
}

BOOST_AUTO_TEST_CASE(timeout_zero_waits_forever) {
    BOOST_TEST((parse_and_validate({"--timeout", "0"}).timeout == std::chrono::seconds(0)));
}

BOOST_AUTO_TEST_CASE(kernel_sockets_mean_the_tcp_transport) {
    BOOST_TEST((coriostream::effective_transport(parse({"-T", "s"})) == transport_choice::tcp));
    BOOST_TEST((coriostream::effective_transport(parse({"--transport", "rsocket"})) ==
                transport_choice::rsocket));
    BOOST_TEST((coriostream::effective_transport(parse({})) == transport_choice::automatic));
}

BOOST_AUTO_TEST_CASE(unknown_words_of_long_options_are_refused) {
    BOOST_TEST(refusal({"--transport", "udp"}) ==
               "--transport takes one of auto, rsocket, tcp, got 'udp'");
    BOOST_TEST(mentions(refusal({"--data-path", "zero"}), "--data-path takes one of iomap"));
    BOOST_TEST(mentions(refusal({"--notify", "x"}), "--notify"));
    BOOST_TEST(mentions(refusal({"--format", "xml"}), "--format"));
    BOOST_TEST(mentions(refusal({"--poll-mode", "x"}), "--poll-mode"));
}

BOOST_AUTO_TEST_CASE(numbers_must_be_whole_and_not_negative) {
    BOOST_TEST(refusal({"-I", "abc"}) == "-I needs a whole number, got 'abc'");
    BOOST_TEST(refusal({"-C", "12k"}) == "-C needs a whole number, got '12k'");
    BOOST_TEST(refusal({"-S", "1.5"}) == "-S needs a whole number, got '1.5'");
    BOOST_TEST(refusal({"-B", "-5"}) == "-B must not be negative, got '-5'");
    BOOST_TEST(refusal({"-I", ""}) == "-I needs a whole number, got ''");
    BOOST_TEST(refusal({"--streams", "two"}) == "--streams needs a whole number, got 'two'");
    BOOST_TEST(mentions(refusal({"-C", "99999999999999999999999"}), "too large"));
    BOOST_TEST(refusal({"--spin-budget", "ten"}) ==
               "--spin-budget needs a whole number, got 'ten'");
    BOOST_TEST(mentions(refusal({"--spin-budget", "1000001"}), "--spin-budget"));
}

BOOST_AUTO_TEST_CASE(counts_must_be_positive) {
    BOOST_TEST(refusal({"-I", "0"}) == "-I must be between 1 and 2147483647, got 0");
    BOOST_TEST(refusal({"-C", "0"}) == "-C must be between 1 and 2147483647, got 0");
    BOOST_TEST(refusal({"-C", "2147483648"}) ==
               "-C must be between 1 and 2147483647, got 2147483648");
    BOOST_TEST(refusal({"--streams", "0"}) == "--streams must be at least 1");
    BOOST_TEST(refusal({"--threads", "0"}) == "--threads must be at least 1");
    BOOST_TEST(refusal({"--threads", "1025"}) == "--threads must be between 1 and 1024, got 1025");
    BOOST_TEST(refusal({"--threads", "5000000000"}) ==
               "--threads must be between 1 and 1024, got 5000000000");
}

BOOST_AUTO_TEST_CASE(size_must_lie_within_riostreams_table) {
    BOOST_TEST(refusal({"-S", "0"}) == "-S must be between 1 and 6291456, got 0");
    BOOST_TEST(refusal({"-S", "6291457"}) == "-S must be between 1 and 6291456, got 6291457");
    BOOST_TEST(refusal({"-S", "6291456"}) == "");
    BOOST_TEST(refusal({"-S", "1"}) == "");
}

BOOST_AUTO_TEST_CASE(a_custom_test_must_count_its_bytes_in_63_bits) {
    BOOST_TEST(
        mentions(refusal({"-I", "2147483647", "-C", "2147483647", "-S", "6291456"}), "2^63"));
    BOOST_TEST(refusal({"-I", "2147483647", "-C", "1000"}) == "");
}

BOOST_AUTO_TEST_CASE(other_values_out_of_range) {
    BOOST_TEST(mentions(refusal({"-B", "2147483648"}), "-B must be between"));
    BOOST_TEST(mentions(refusal({"-i", "2147483648"}), "-i must be between"));
    BOOST_TEST(mentions(refusal({"-k", "2147483648"}), "-k must be between"));
    BOOST_TEST(mentions(refusal({"--timeout", "2147483648"}), "--timeout must be between"));
    BOOST_TEST(refusal({"-p", "0"}) == "-p must be between 1 and 65535, got 0");
    BOOST_TEST(refusal({"-p", "65536"}) == "-p must be between 1 and 65535, got 65536");
    BOOST_TEST(refusal({"-p", ""}) == "-p needs a port");
    BOOST_TEST(refusal({"-s", ""}) == "-s needs a server address");
    BOOST_TEST(refusal({"-b", ""}) == "-b needs a bind address");
    BOOST_TEST(refusal({"--output", ""}) == "--output needs a file name");
}

BOOST_AUTO_TEST_CASE(conflicting_choices_are_refused) {
    BOOST_TEST(mentions(refusal({"--loopback", "-s", "peer"}), "--loopback"));
    BOOST_TEST(refusal({"--loopback", "-b", "10.0.0.1"}) == "");
    BOOST_TEST(mentions(refusal({"-T", "s", "--transport", "rsocket"}), "-T s"));
    BOOST_TEST(refusal({"-T", "s", "--transport", "tcp"}) == "");
    BOOST_TEST(mentions(refusal({"-f", "gid", "-T", "s"}), "-f gid"));
    BOOST_TEST(mentions(refusal({"-f", "gid", "--transport", "tcp"}), "-f gid"));
}

BOOST_AUTO_TEST_CASE(allow_repeats_and_max_streams_limit_the_server) {
    const auto opts = parse({"--allow", "10.0.0.0/8", "--allow=fd00::/8", "--max-streams", "4"});
    BOOST_TEST(opts.allow.size() == 2u);
    BOOST_TEST(opts.allow[0] == "10.0.0.0/8");
    BOOST_TEST(opts.allow[1] == "fd00::/8");
    BOOST_REQUIRE(opts.max_streams.has_value());
    BOOST_TEST(*opts.max_streams == 4u);
    BOOST_TEST(refusal({"--allow", "10.0.0.0/8", "--max-streams", "4"}) == "");
    BOOST_TEST(refusal({"--allow", "10.0.0.0/33"}) ==
               "--allow takes a network as address[/prefix], got '10.0.0.0/33'");
    BOOST_TEST(refusal({"--allow", "somewhere"}) ==
               "--allow takes a network as address[/prefix], got 'somewhere'");
    BOOST_TEST(refusal({"--max-streams", "0"}) == "--max-streams must be at least 1");
    BOOST_TEST(mentions(refusal({"-s", "peer", "--allow", "10.0.0.0/8"}), "-s"));
    BOOST_TEST(mentions(refusal({"-s", "peer", "--max-streams", "2"}), "-s"));
    BOOST_TEST(refusal({"--loopback", "--max-streams", "2", "--allow", "127.0.0.0/8"}) == "");
}

BOOST_AUTO_TEST_CASE(unknown_options_and_stray_arguments_are_refused) {
    BOOST_TEST(refusal({"-x"}) == "unrecognised option '-x'");
    // riostream has no -h either; --help is the way to ask.
    BOOST_TEST(refusal({"-h"}) == "unrecognised option '-h'");
    BOOST_TEST(refusal({"--bogus"}) == "unrecognised option '--bogus'");
    BOOST_TEST(refusal({"host"}) == "unexpected argument 'host'");
    // No abbreviations: they would shift meaning as options are added.
    BOOST_TEST(refusal({"--stream", "2"}) == "unrecognised option '--stream'");
}

BOOST_AUTO_TEST_CASE(missing_values_name_the_short_flag_as_typed) {
    BOOST_TEST(refusal({"-S"}) == "the required argument for option '-S' is missing");
    BOOST_TEST(refusal({"--streams"}) == "the required argument for option '--streams' is missing");
}

BOOST_AUTO_TEST_CASE(riostreams_short_flags_have_no_long_spelling) {
    BOOST_TEST(mentions(refusal({"--s", "host"}), "unrecognised option"));
    BOOST_TEST(mentions(refusal({"--T", "a"}), "unrecognised option"));
}

BOOST_AUTO_TEST_CASE(usage_starts_with_riostreams_and_lists_the_extensions) {
    std::ostringstream out;
    coriostream::print_usage(out, "coriostream");
    const auto text = out.str();
    BOOST_TEST(text.rfind("usage: coriostream\n"
                          "\t[-s server_address]\n"
                          "\t[-b bind_address]\n"
                          "\t[-f address_format]\n"
                          "\t    name, ip, ipv6, or gid\n"
                          "\t[-B buffer_size]\n"
                          "\t[-i inline_size]\n"
                          "\t[-I iterations]\n"
                          "\t[-C transfer_count]\n"
                          "\t[-S transfer_size or all]\n"
                          "\t[-p port_number]\n",
                          0) == 0U);
    for (const char* part :
         {"-k keepalive_time", "s|sockets", "a|async", "b|blocking", "n|nonblocking", "r|resolve",
          "v|verify", "--help", "--dry-run", "--transport", "--data-path", "--notify", "--loopback",
          "--streams", "--threads", "--format", "--output", "--timeout", "--poll-mode",
          "--spin-budget"})
        BOOST_TEST(mentions(text, part), part);
    BOOST_TEST(!mentions(text, " \n"));
}
