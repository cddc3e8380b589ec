#define BOOST_TEST_MODULE network_allow_list
#include <boost/test/unit_test.hpp>

#include <boost/asio/error.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/system/system_error.hpp>

#include <corio/network_allow_list.hpp>

namespace asio = boost::asio;

namespace {

bool allows(const corio::network_allow_list& list, const char* address) {
    return list.contains(asio::ip::make_address(address));
}

} // namespace

BOOST_AUTO_TEST_CASE(an_empty_list_admits_nobody) {
    const corio::network_allow_list list;
    BOOST_TEST(list.empty());
    BOOST_TEST(!allows(list, "127.0.0.1"));
    BOOST_TEST(!allows(list, "::1"));
}

BOOST_AUTO_TEST_CASE(ipv4_networks_match_their_prefix_only) {
    corio::network_allow_list list;
    list.add("10.0.0.0/8");
    list.add("192.168.1.7/24"); // host bits ignored: 192.168.1.0/24
    list.add("172.16.5.4");     // one host
    BOOST_TEST(list.size() == 3u);
    BOOST_TEST(allows(list, "10.255.1.2"));
    BOOST_TEST(!allows(list, "11.0.0.1"));
    BOOST_TEST(allows(list, "192.168.1.200"));
    BOOST_TEST(!allows(list, "192.168.2.1"));
    BOOST_TEST(allows(list, "172.16.5.4"));
    BOOST_TEST(!allows(list, "172.16.5.5"));
    BOOST_TEST(!allows(list, "::1"));
}

BOOST_AUTO_TEST_CASE(odd_prefixes_compare_the_partial_byte) {
    corio::network_allow_list list;
    list.add("10.32.0.0/11"); // 10.32.0.0 - 10.63.255.255
    BOOST_TEST(allows(list, "10.32.0.1"));
    BOOST_TEST(allows(list, "10.63.255.255"));
    BOOST_TEST(!allows(list, "10.31.255.255"));
    BOOST_TEST(!allows(list, "10.64.0.0"));
    corio::network_allow_list everyone;
    everyone.add("0.0.0.0/0");
    BOOST_TEST(allows(everyone, "203.0.113.9"));
    BOOST_TEST(!allows(everyone, "2001:db8::1"));
}

BOOST_AUTO_TEST_CASE(ipv6_networks_match_their_prefix_only) {
    corio::network_allow_list list;
    list.add("fd00::/8");
    list.add("2001:db8:1::/48");
    list.add("::1");
    BOOST_TEST(allows(list, "fd12:3456::1"));
    BOOST_TEST(!allows(list, "fe80::1"));
    BOOST_TEST(allows(list, "2001:db8:1:ffff::2"));
    BOOST_TEST(!allows(list, "2001:db8:2::1"));
    BOOST_TEST(allows(list, "::1"));
    BOOST_TEST(!allows(list, "::2"));
    BOOST_TEST(!allows(list, "127.0.0.1"));
}

BOOST_AUTO_TEST_CASE(ipv4_mapped_peers_match_ipv4_networks) {
    corio::network_allow_list list;
    list.add("127.0.0.0/8");
    BOOST_TEST(allows(list, "::ffff:127.0.0.1"));
    BOOST_TEST(!allows(list, "::ffff:128.0.0.1"));
    corio::network_allow_list mapped;
    mapped.add("::ffff:10.0.0.0/104"); // 10.0.0.0/8 written as IPv6
    BOOST_TEST(allows(mapped, "10.1.2.3"));
    BOOST_TEST(allows(mapped, "::ffff:10.1.2.3"));
    BOOST_TEST(!allows(mapped, "11.1.2.3"));
}

BOOST_AUTO_TEST_CASE(the_endpoint_call_is_the_accept_filter) {
    corio::network_allow_list list;
    list.add("127.0.0.0/8");
    BOOST_TEST(list(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.2"), 4000)));
    BOOST_TEST(!list(asio::ip::tcp::endpoint(asio::ip::make_address("10.0.0.2"), 4000)));
}

BOOST_AUTO_TEST_CASE(bad_networks_are_refused_with_invalid_argument) {
    corio::network_allow_list list;
    for (const char* bad : {"", "10.0.0.0/", "10.0.0.0/33", "10.0.0.0/8x", "10.0.0/8",
                            "::/129", "host.example/8", "10.0.0.0/-1", "::ffff:10.0.0.0/95"}) {
        boost::system::error_code ec;
        list.add(bad, ec);
        BOOST_TEST((ec == asio::error::invalid_argument), "'" << bad << "': " << ec.message());
    }
    BOOST_TEST(list.empty());
    try {
        list.add("10.0.0.0/40");
        BOOST_FAIL("no exception");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST((e.code() == asio::error::invalid_argument));
        BOOST_TEST(std::string(e.what()).find("'10.0.0.0/40'") != std::string::npos, e.what());
    }
}
