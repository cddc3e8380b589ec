#define BOOST_TEST_MODULE service_capacity
#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <optional>

#include <corio/detail/service_capacity.hpp>

// What CORIO_RSOCKET_CM_CAPACITY and CORIO_RSOCKET_LISTEN_CAPACITY may say:
// a whole number from 1 to 65535 as written, or nothing for the default;
// everything else is refused, never read as something else.

using corio::detail::max_service_capacity;
using corio::detail::parse_service_capacity;

namespace {
constexpr std::size_t fallback = 256;
} // namespace

BOOST_AUTO_TEST_CASE(unset_or_empty_means_the_default) {
    BOOST_TEST((parse_service_capacity(nullptr, fallback) == std::optional<std::size_t>(fallback)));
    BOOST_TEST((parse_service_capacity("", fallback) == std::optional<std::size_t>(fallback)));
}

BOOST_AUTO_TEST_CASE(whole_numbers_in_range_are_taken_as_written) {
    BOOST_TEST((parse_service_capacity("1", fallback) == std::optional<std::size_t>(1)));
    BOOST_TEST((parse_service_capacity("5", fallback) == std::optional<std::size_t>(5)));
    BOOST_TEST((parse_service_capacity("1024", fallback) == std::optional<std::size_t>(1024)));
    BOOST_TEST((parse_service_capacity("0064", fallback) == std::optional<std::size_t>(64)));
    BOOST_TEST(max_service_capacity == 65535u);
    BOOST_TEST((parse_service_capacity("65535", fallback) == std::optional<std::size_t>(65535)));
}

BOOST_AUTO_TEST_CASE(anything_else_is_refused) {
    for (const char* text : {"0", "000", "65536", "1000000", "99999999999999999999999999", "-1",
                             "+5", " 5", "5 ", "12k", "abc", "1e3", "0x10", "5.0"})
        BOOST_TEST(!parse_service_capacity(text, fallback).has_value(), "'" << text << "'");
}
