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

BOOST_AUTO_TEST_CASE(auto_without_a_device_falls_back_to_tcp_and_the_stream_path) {
    const auto result = settle({"--loopback"}, false);
    BOOST_TEST((result.settings.transport == corio::transport::tcp));
    BOOST_TEST((result.settings.data_path == data_path_kind::stream));
    BOOST_TEST(result.notices ==
               "coriostream: no RDMA device; using --transport tcp and --data-path stream\n");
}

BOOST_AUTO_TEST_CASE(auto_fallback_with_the_stream_path_says_only_tcp) {
    const auto result = settle({"--data-path", "stream"}, false);
    BOOST_TEST((result.settings.transport == corio::transport::tcp));
    BOOST_TEST(result.notices == "coriostream: no RDMA device; using --transport tcp\n");
}

BOOST_AUTO_TEST_CASE(iomap_on_tcp_by_request_is_refused) {
    const std::string message = "--data-path iomap needs rsockets; use --data-path stream on tcp";
    BOOST_TEST(refusal({"--transport", "tcp"}, true) == message);
    BOOST_TEST(refusal({"-T", "s"}, false) == message);
    BOOST_TEST(refusal({"-T", "s", "--data-path", "stream"}, false) == "");
}

BOOST_AUTO_TEST_CASE(rsocket_by_request_stays_rsocket_without_a_device) {
    // The missing device is then reported when the socket is opened.
    const auto result = settle({"--transport", "rsocket"}, false);
    BOOST_TEST((result.settings.transport == corio::transport::rsocket));
    BOOST_TEST(result.notices.empty());
}

BOOST_AUTO_TEST_CASE(test_options_n_b_a_choose_the_waiting_and_poll_mode_wins) {
    using corio::poll_mode;
    const auto polling = [](std::initializer_list<const char*> args) {
        return settle(args, true).settings.polling;
    };
    const auto budget = [](std::initializer_list<const char*> args) {
        return settle(args, true).settings.spin_budget;
    };
    constexpr std::chrono::nanoseconds none{0};
    // riostream's default is -T n: spinning.
    BOOST_TEST((polling({}) == poll_mode::busy));
    BOOST_TEST((budget({}) == none));
    BOOST_TEST((polling({"-T", "n"}) == poll_mode::busy));
    // -T b blocks: the poller thread, no spin first.
    BOOST_TEST((polling({"-T", "b"}) == poll_mode::thread));
    BOOST_TEST((budget({"-T", "b"}) == none));
    BOOST_TEST((polling({"-T", "n", "-T", "b"}) == poll_mode::thread));
    BOOST_TEST((polling({"-T", "b", "-T", "n"}) == poll_mode::busy));
    // -T a waits through polling: a spin, then the poller thread; it is
    // independent of b and n, as in riostream.
    BOOST_TEST((polling({"-T", "a"}) == poll_mode::thread));
    BOOST_TEST((budget({"-T", "a"}) == corio::rpoll_service::default_spin_budget));
    BOOST_TEST((polling({"-T", "a", "-T", "n"}) == poll_mode::thread));
    BOOST_TEST((budget({"-T", "n", "-T", "a"}) == corio::rpoll_service::default_spin_budget));
    // The long form wins, in either order.
    BOOST_TEST((polling({"-T", "b", "--poll-mode", "busy"}) == poll_mode::busy));
    BOOST_TEST((polling({"--poll-mode", "thread", "-T", "n"}) == poll_mode::thread));
    BOOST_TEST((budget({"--poll-mode", "thread", "-T", "a"}) == none));
    BOOST_TEST((polling({"--poll-mode", "adaptive", "-T", "b"}) == poll_mode::thread));
    BOOST_TEST((budget({"--poll-mode", "adaptive", "-T", "b"}) ==
                corio::rpoll_service::default_spin_budget));
}

BOOST_AUTO_TEST_CASE(address_formats_map_onto_corios) {
    BOOST_TEST((settle({"-f", "ip"}, true).settings.host_format == corio::address_format::ip));
    BOOST_TEST((settle({"-f", "ipv6"}, true).settings.host_format == corio::address_format::ipv6));
    BOOST_TEST((settle({}, true).settings.host_format == corio::address_format::name));
}

BOOST_AUTO_TEST_CASE(rdma_cm_resolution_is_not_supported_yet) {
    BOOST_TEST(refusal({"-f", "gid"}, true) ==
               "-f gid is not supported yet (it needs rdma_getaddrinfo)");
    BOOST_TEST(refusal({"-T", "r"}, true) ==
               "-T r is not supported yet (it needs rdma_getaddrinfo)");
}

BOOST_AUTO_TEST_CASE(keepalive_beyond_tcp_keepidle_is_refused) {
    BOOST_TEST(refusal({"-k", "32767"}, true) == "");
    BOOST_TEST(refusal({"-k", "32768"}, true) ==
               "-k above 32767 s is not supported (Linux's limit for TCP_KEEPIDLE)");
}
