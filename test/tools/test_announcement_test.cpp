#define BOOST_TEST_MODULE test_announcement
#include <boost/test/unit_test.hpp>

#include <array>
#include <cstdint>
#include <limits>
#include <string>

#include <coriostream/data_pattern.hpp>
#include <coriostream/options.hpp>
#include <coriostream/test_announcement.hpp>
#include <coriostream/test_plan.hpp>

using coriostream::announcement_mismatch;
using coriostream::data_path_kind;
using coriostream::notify_method;
using coriostream::test_announcement;
using coriostream::test_case;
using role = test_announcement::role;

namespace {

// A test on the iomap path with the marker, as the peer announces it: the
// peer is the client throughout, this end the server.
test_announcement theirs(std::size_t size, std::size_t count, std::size_t iterations) {
    return test_announcement::of(test_case{"custom", size, count, iterations},
                                 data_path_kind::iomap, notify_method::marker, role::client);
}

// The same, as this end announces it.
test_announcement ours(std::size_t size, std::size_t count, std::size_t iterations) {
    return test_announcement::of(test_case{"custom", size, count, iterations},
                                 data_path_kind::iomap, notify_method::marker, role::server);
}

} // namespace

// The bytes are a wire format between two coriostreams, possibly of
// different builds: pinned here byte for byte.
BOOST_AUTO_TEST_CASE(the_layout_is_magic_size_path_count_iterations_little_endian) {
    const auto bytes = theirs(0x030201, 0x07060504, 0x0b0a0908).encode();
    const test_announcement::bytes_type expected{'c',  'r',  'i',  'o',  0x01, 0x02, 0x03, 2,
                                                 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b};
    BOOST_TEST((bytes == expected));
    // The server's has the data path byte's top bit set.
    BOOST_TEST(ours(0x030201, 0x07060504, 0x0b0a0908).encode()[7] == 0x82);
}

BOOST_AUTO_TEST_CASE(every_test_the_options_allow_comes_back_as_it_went) {
    const std::size_t int_max = std::numeric_limits<int>::max();
    for (const auto kind : {data_path_kind::iomap, data_path_kind::stream}) {
        for (const auto notify : {notify_method::marker, notify_method::message}) {
            for (const auto& test :
                 {test_case{"64_lat", 64, 1, 100000},
                  test_case{"largest", coriostream::largest_table_size(), int_max, int_max},
                  test_case{"custom", 1, 1, 1}}) {
                for (const auto sender : {role::client, role::server}) {
                    const auto sent = test_announcement::of(test, kind, notify, sender);
                    const auto bytes = sent.encode();
                    const auto received = test_announcement::decode(bytes);
                    BOOST_TEST_REQUIRE(received.has_value());
                    BOOST_TEST((*received == sent));
                    const auto other = sender == role::client ? role::server : role::client;
                    BOOST_TEST(!announcement_mismatch(
                        bytes, test_announcement::of(test, kind, notify, other)));
                }
            }
        }
    }
}

// What riostream and rstream send there: zeros from a fresh buffer, -T v's
// pattern, or what the peer last wrote. None of it is compared.
BOOST_AUTO_TEST_CASE(bytes_that_are_not_an_announcement_are_not_compared) {
    test_announcement::bytes_type zeros{};
    BOOST_TEST(!test_announcement::decode(zeros));
    BOOST_TEST(!announcement_mismatch(zeros, ours(64, 1, 100000)));

    coriostream::data_pattern pattern;
    for (int sync = 0; sync < 64; ++sync) {
        test_announcement::bytes_type formatted{};
        pattern.format(formatted);
        BOOST_TEST(!test_announcement::decode(formatted));
    }
    auto almost = theirs(64, 1, 100000).encode();
    almost[3] = 'O';
    BOOST_TEST(!announcement_mismatch(almost, ours(4096, 1, 10)));
}

// A riostream client's buffer takes the server's sync bytes, riowrites them
// into the server's mapping, gets them back in the server's riowrites and
// sends them as its next sync: the server's own announcement of the
// previous test (the guest's interop run found 64_lat's at 4k_lat). rstream
// relays the same way on the stream path.
BOOST_AUTO_TEST_CASE(this_ends_own_announcement_relayed_back_is_not_compared) {
    BOOST_TEST(!announcement_mismatch(ours(64, 1, 100000).encode(), ours(4096, 1, 10000)));
    const auto client_relayed = announcement_mismatch(
        theirs(64, 1, 100000).encode(),
        test_announcement::of(test_case{"4k_lat", 4096, 1, 10000}, data_path_kind::iomap,
                              notify_method::marker, role::client));
    BOOST_TEST(!client_relayed.has_value());
    // The peer's role and the same test: nothing to say.
    BOOST_TEST(!announcement_mismatch(theirs(64, 1, 10).encode(), ours(64, 1, 10)));
}

BOOST_AUTO_TEST_CASE(a_different_test_names_both_and_the_options_that_set_them) {
    const auto line = announcement_mismatch(theirs(4096, 2, 3).encode(), ours(64, 2, 3));
    BOOST_TEST_REQUIRE(line.has_value());
    BOOST_TEST(*line == "the peer runs a different test (-S 4096 -C 2 -I 3 there, -S 64 -C 2 "
                        "-I 3 here): give both ends the same -S, -C and -I, or none");
    BOOST_TEST(announcement_mismatch(theirs(64, 1, 3).encode(), ours(64, 2, 3)).has_value());
    BOOST_TEST(announcement_mismatch(theirs(64, 2, 4).encode(), ours(64, 2, 3)).has_value());
}

BOOST_AUTO_TEST_CASE(a_different_data_path_or_notify_names_the_options) {
    const test_case test{"custom", 64, 1, 10};
    const auto stream =
        test_announcement::of(test, data_path_kind::stream, notify_method::marker, role::client);
    const auto message =
        test_announcement::of(test, data_path_kind::iomap, notify_method::message, role::server);
    // The stream path has no notify: it announces the same either way.
    BOOST_TEST((stream == test_announcement::of(test, data_path_kind::stream,
                                                notify_method::message, role::client)));

    const auto line = announcement_mismatch(stream.encode(), message);
    BOOST_TEST_REQUIRE(line.has_value());
    BOOST_TEST(*line == "the peer runs a different data path (--data-path stream there, "
                        "--data-path iomap --notify message here): give both ends the same "
                        "--data-path and --notify");
    const auto notify_line = announcement_mismatch(theirs(64, 1, 10).encode(), message);
    BOOST_TEST_REQUIRE(notify_line.has_value());
    BOOST_TEST(notify_line->find("--notify marker there") != std::string::npos);

    const auto other_test =
        test_announcement::of(test_case{"custom", 128, 1, 10}, data_path_kind::stream,
                              notify_method::marker, role::client);
    const auto both = announcement_mismatch(other_test.encode(), message);
    BOOST_TEST_REQUIRE(both.has_value());
    BOOST_TEST(both->find("different data path") != std::string::npos);
    BOOST_TEST(both->find("; and a different test (-S 128 -C 1 -I 10 there") != std::string::npos);
}

// A later coriostream may add a data path: still a difference, by number.
BOOST_AUTO_TEST_CASE(an_unknown_data_path_is_a_difference) {
    auto bytes = theirs(64, 1, 10).encode();
    bytes[7] = 9;
    const auto line = announcement_mismatch(bytes, ours(64, 1, 10));
    BOOST_TEST_REQUIRE(line.has_value());
    BOOST_TEST(line->find("data path 9 there") != std::string::npos);
}
