#pragma once

#include <chrono>
#include <functional>

#include <boost/asio/awaitable.hpp>
#include <boost/test/unit_test.hpp>

namespace corio::test {

inline constexpr std::chrono::seconds default_deadline{10};

/// Runs `body` on a fresh io_context, in poll_mode_under_test(), until it
/// finishes. An exception thrown by
/// the body fails the test; so does a body still unfinished at `deadline` or
/// suspended with nothing left that could resume it.
void run_coroutine(const std::function<boost::asio::awaitable<void>()>& body,
                   std::chrono::steady_clock::duration deadline);

} // namespace corio::test

/// A test case whose body is a boost::asio::awaitable<void>, run with
/// run_coroutine and the default deadline. Decorators may follow the name,
/// as in BOOST_AUTO_TEST_CASE (e.g. `*corio::test::skip_if(reason)`).
#define CORIO_COROUTINE_TEST_CASE(name, ...)                                                       \
    CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(name, ::corio::test::default_deadline __VA_OPT__(, ) \
                                                                                   __VA_ARGS__)

#define CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(name, deadline, ...)                               \
    static ::boost::asio::awaitable<void> name##_coroutine();                                      \
    BOOST_AUTO_TEST_CASE(name __VA_OPT__(, ) __VA_ARGS__) {                                        \
        ::corio::test::run_coroutine(&name##_coroutine, deadline);                                 \
    }                                                                                              \
    static ::boost::asio::awaitable<void> name##_coroutine()
