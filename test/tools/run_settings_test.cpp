#define BOOST_TEST_MODULE run_settings
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include <corio/rpoll_service.hpp>

#include <coriostream/options.hpp>
#include <coriostream/run_error.hpp>
#include <coriostream/run_settings.hpp>

using coriostream::data_path_kind;
using coriostream::notify_method;
using coriostream::run_error;
using coriostream::run_settings;

namespace {

coriostream::options parse(std::initializer_list<const char*> arguments) {
    std::vector<const char*> argv{"coriostream"};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    auto opts = coriostream::parse_options(static_cast<int>(argv.size()), argv.data());
    coriostream::validate(opts);
    return opts;
}

struct settled {
    run_settings settings;
    std::string notices;
};

settled settle(std::initializer_list<const char*> arguments, bool rdma_available) {
    std::ostringstream notices;
    const auto settings =
        coriostream::settle_run_settings(parse(arguments), rdma_available, notices);
    return {settings, notices.str()};
}

std::string refusal(std::initializer_list<const char*> arguments, bool rdma_available) {
    try {
        settle(arguments, rdma_available);
    } catch (const run_error& error) {
        return error.what();
    }
    return "";
}

} // namespace

BOOST_AUTO_TEST_CASE(auto_takes_rsockets_where_a_device_exists) {
    const auto result = settle({}, true);
    BOOST_TEST((result.settings.transport == corio::transport::rsocket));
    BOOST_TEST((result.settings.data_path == data_path_kind::iomap));
    BOOST_TEST(result.notices.empty());
}

const std::string emulation =
    "--data-path iomap through corio's emulation of riomap and riowrite, with --notify message "
    "(the peer must be coriostream)";

BOOST_AUTO_TEST_CASE(auto_without_a_device_falls_back_to_tcp_and_the_emulated_iomap_path) {
    const auto result = settle({"--loopback"}, false);
    BOOST_TEST((result.settings.transport == corio::transport::tcp));
    BOOST_TEST((result.settings.data_path == data_path_kind::iomap));
    BOOST_TEST((result.settings.notify == notify_method::message));
    BOOST_TEST(result.notices ==
               "coriostream: no RDMA device; using --transport tcp and " + emulation + "\n");
}

BOOST_AUTO_TEST_CASE(auto_fallback_with_the_stream_path_says_only_tcp) {
    const auto result = settle({"--data-path", "stream"}, false);
    BOOST_TEST((result.settings.transport == corio::transport::tcp));
    BOOST_TEST(result.notices == "coriostream: no RDMA device; using --transport tcp\n");
}

BOOST_AUTO_TEST_CASE(iomap_on_tcp_runs_emulated_with_the_notify_message) {
    for (const bool rdma : {true, false}) {
        const auto result = settle({"--transport", "tcp"}, rdma);
        BOOST_TEST((result.settings.data_path == data_path_kind::iomap));
        BOOST_TEST((result.settings.notify == notify_method::message));
        BOOST_TEST(result.notices == "coriostream: on tcp, " + emulation + "\n");
    }
    BOOST_TEST(settle({"--transport", "tcp", "--notify", "message"}, true).notices ==
               "coriostream: on tcp, " + emulation + "\n");
    BOOST_TEST(refusal({"--transport", "tcp", "--notify", "marker"}, true) ==
               "--notify marker needs rsockets: over tcp an iowrite lands only during a "
               "receive, so use --notify message or --data-path stream");
    // On rsockets nothing changes: the marker, and no notice.
    const auto rsocket = settle({"--transport", "rsocket"}, true);
    BOOST_TEST((rsocket.settings.notify == notify_method::marker));
    BOOST_TEST(rsocket.notices.empty());
}

BOOST_AUTO_TEST_CASE(kernel_sockets_take_the_stream_path_unless_both_ends_are_corio) {
    // -T s is rstream's kernel-socket mode: its peer may be rstream.
    const auto client = settle({"-T", "s", "-s", "127.0.0.1"}, false);
    BOOST_TEST((client.settings.transport == corio::transport::tcp));
    BOOST_TEST((client.settings.data_path == data_path_kind::stream));
    BOOST_TEST(client.notices.empty());
    BOOST_TEST((settle({"-T", "s", "--loopback"}, false).settings.data_path ==
                data_path_kind::iomap));
    BOOST_TEST((settle({"-T", "s", "--data-path", "iomap"}, false).settings.data_path ==
                data_path_kind::iomap));
}

BOOST_AUTO_TEST_CASE(rsocket_by_request_stays_rsocket_without_a_device) {
    // The missing device is then reported when the socket is opened.
    const auto result = settle({"--transport", "rsocket"}, false);
    BOOST_TEST((result.settings.transport == corio::transport::rsocket));
    BOOST_TEST(result.notices.empty());
}

BOOST_AUTO_TEST_CASE(the_test_letters_choose_the_poll_mode_as_riostream_waits) {
    const auto polling = [](std::initializer_list<const char*> args) {
        return settle(args, true).settings.polling;
    };
    // riostream's default and -T n spin on EAGAIN; -T a alone spins in
    // rpoll with timeout 0.
    BOOST_TEST((polling({}) == corio::poll_mode::busy));
    BOOST_TEST((polling({"-T", "n"}) == corio::poll_mode::busy));
    BOOST_TEST((polling({"-T", "a"}) == corio::poll_mode::busy));
    // -T b sleeps in its calls, or in rpoll with timeout -1 with -T a.
    BOOST_TEST((polling({"-T", "b"}) == corio::poll_mode::thread));
    BOOST_TEST((polling({"-T", "a", "-T", "b"}) == corio::poll_mode::thread));
    BOOST_TEST((polling({"-T", "blocking"}) == corio::poll_mode::thread));
    // b and n share one flag word: the last wins.
    BOOST_TEST((polling({"-T", "b", "-T", "n"}) == corio::poll_mode::busy));
    BOOST_TEST((polling({"-T", "n", "-T", "b"}) == corio::poll_mode::thread));
    // --poll-mode wins over the letters, before or after them.
    BOOST_TEST((polling({"-T", "b", "--poll-mode", "busy"}) == corio::poll_mode::busy));
    BOOST_TEST((polling({"--poll-mode", "thread", "-T", "n"}) == corio::poll_mode::thread));
    BOOST_TEST((polling({"--poll-mode", "thread"}) == corio::poll_mode::thread));
    // Only adaptive spins before its waits: the poller thread, with corio's
    // spin budget, whatever the letters say.
    const auto budget = [](std::initializer_list<const char*> args) {
        return settle(args, true).settings.spin_budget;
    };
    constexpr std::chrono::nanoseconds none{0};
    BOOST_TEST((budget({}) == none));
    BOOST_TEST((budget({"-T", "b"}) == none));
    BOOST_TEST((budget({"-T", "a"}) == none));
    BOOST_TEST((budget({"--poll-mode", "thread"}) == none));
    BOOST_TEST((polling({"--poll-mode", "adaptive", "-T", "n"}) == corio::poll_mode::thread));
    BOOST_TEST((budget({"--poll-mode", "adaptive", "-T", "n"}) ==
                corio::rpoll_service::default_spin_budget));
    BOOST_TEST((budget({"-T", "b", "--poll-mode", "adaptive"}) ==
                corio::rpoll_service::default_spin_budget));
    // --spin-budget sets it, and only the adaptive wait takes one.
    BOOST_TEST((budget({"--poll-mode", "adaptive", "--spin-budget", "50"}) ==
                std::chrono::microseconds(50)));
    BOOST_TEST((budget({"--spin-budget", "0", "--poll-mode", "adaptive"}) == none));
    BOOST_TEST(refusal({"--spin-budget", "50"}, true) ==
               "--spin-budget needs --poll-mode adaptive: only the adaptive wait spins before "
               "it sleeps");
    BOOST_TEST(refusal({"--poll-mode", "thread", "--spin-budget", "5"}, true) ==
               "--spin-budget needs --poll-mode adaptive: only the adaptive wait spins before "
               "it sleeps");
}

BOOST_AUTO_TEST_CASE(loopback_streams_and_threads_say_what_shares_a_streams_threads) {
    using coriostream::thread_sharing;
    const auto sharing = [](std::initializer_list<const char*> args) {
        return settle(args, true).settings.sharing;
    };
    // One stream, its peer in another process, on however many threads.
    BOOST_TEST((sharing({}) == thread_sharing::stream_alone));
    BOOST_TEST((sharing({"--threads", "2"}) == thread_sharing::stream_alone));
    BOOST_TEST((sharing({"-s", "127.0.0.1"}) == thread_sharing::stream_alone));
    // Other streams, whose peers are elsewhere or have threads enough.
    BOOST_TEST((sharing({"--streams", "2"}) == thread_sharing::other_streams));
    BOOST_TEST((sharing({"--streams", "2", "--threads", "2"}) == thread_sharing::other_streams));
    BOOST_TEST((sharing({"--loopback", "--threads", "2"}) == thread_sharing::other_streams));
    BOOST_TEST((sharing({"--loopback", "--threads", "8", "--streams", "4"}) ==
                thread_sharing::other_streams));
    // --loopback with fewer threads than halves: a server half may wait for
    // the thread its client holds.
    const auto peer = thread_sharing::peer_on_these_threads;
    BOOST_TEST((sharing({"--loopback"}) == peer));
    BOOST_TEST((sharing({"--loopback", "--threads", "1"}) == peer));
    BOOST_TEST((sharing({"--loopback", "--streams", "4"}) == peer));
    BOOST_TEST((sharing({"--loopback", "-T", "b"}) == peer));
    BOOST_TEST((sharing({"--loopback", "--threads", "2", "--streams", "2"}) == peer));
    BOOST_TEST((sharing({"--loopback", "--threads", "7", "--streams", "4"}) == peer));
}

BOOST_AUTO_TEST_CASE(address_formats_map_onto_corios) {
    BOOST_TEST((settle({"-f", "ip"}, true).settings.host_format == corio::address_format::ip));
    BOOST_TEST((settle({"-f", "ipv6"}, true).settings.host_format == corio::address_format::ipv6));
    BOOST_TEST((settle({}, true).settings.host_format == corio::address_format::name));
}

BOOST_AUTO_TEST_CASE(t_r_and_f_gid_resolve_with_rdma_getaddrinfo) {
    BOOST_TEST((settle({}, true).settings.lookup == corio::resolve_method::getaddrinfo));
    BOOST_TEST((settle({"-T", "r"}, true).settings.lookup ==
                corio::resolve_method::rdma_getaddrinfo));
    BOOST_TEST((settle({"-T", "resolve"}, false).settings.lookup ==
                corio::resolve_method::rdma_getaddrinfo));
    const auto gid = settle({"-f", "gid"}, true).settings;
    BOOST_TEST((gid.lookup == corio::resolve_method::rdma_getaddrinfo));
    BOOST_TEST((gid.host_format == corio::address_format::gid));
    // A GID needs rsockets: where auto falls back to tcp, the run cannot go.
    BOOST_TEST(refusal({"-f", "gid"}, false) ==
               "-f gid needs rsockets; kernel TCP has no AF_IB (no RDMA device here)");
}

BOOST_AUTO_TEST_CASE(keepalive_beyond_tcp_keepidle_is_refused) {
    BOOST_TEST(refusal({"-k", "32767"}, true) == "");
    BOOST_TEST(refusal({"-k", "32768"}, true) ==
               "-k above 32767 s is not supported (Linux's limit for TCP_KEEPIDLE)");
}
