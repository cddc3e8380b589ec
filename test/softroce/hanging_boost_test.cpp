#define BOOST_TEST_MODULE hanging_boost_test
#include <boost/test/unit_test.hpp>

#include <thread>

#include <unistd.h>

// guest_run_hang_test.sh's COMMAND: a Boost.Test case that never ends, as a
// hung test's does, with a second thread that waits too. guest-run must
// show where each of them waits.

namespace {

// Different bodies, so that no optimisation folds the two into one symbol.
[[gnu::noinline]] void second_thread_waits_here() {
    for (;;)
        ::sleep(3600);
}

[[gnu::noinline]] void test_case_waits_here() {
    for (;;)
        ::pause();
}

} // namespace

BOOST_AUTO_TEST_CASE(never_ends) {
    std::thread second(second_thread_waits_here);
    test_case_waits_here();
    second.join();
}
