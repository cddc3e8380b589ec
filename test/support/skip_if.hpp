#pragma once

#include <optional>
#include <string>

#include <boost/test/unit_test.hpp>

namespace corio::test {

/// Why a test case cannot run on this host, or nullopt when it can.
using skip_reason = std::optional<std::string> (*)();

/// A decorator for a test case that cannot run everywhere:
///
///     BOOST_AUTO_TEST_CASE(over_ipv6, *corio::test::skip_if(no_ipv6_loopback))
///
/// When `reason` gives one, Boost.Test skips the case (never runs its body)
/// and "SKIP: <case>: <reason>" is printed. Boost.Test exits 0 for skipped
/// cases, so an executable whose every case that was to run was skipped
/// would pass without testing anything: then it exits 77 instead, which
/// meson reports as SKIP. An executable that ran other cases passes (or
/// fails) on those, and its log names the skipped ones.
boost::unit_test::precondition skip_if(skip_reason reason);

} // namespace corio::test
