#pragma once

#include <chrono>

namespace corio::test {

/// How many times longer than on an idle machine with a plain build a test
/// may take: CORIO_TEST_TIME_FACTOR, a number from 1 to 100 (default 1).
/// Give it with meson test's --timeout-multiplier, which stretches only
/// meson's own timeouts: this stretches the deadlines inside the tests
/// (run_until_finished) and the guest's timeout (test/softroce/run-rdma-test).
/// Throws std::invalid_argument, naming the variable, for anything else.
double time_factor();

/// `deadline` times time_factor().
std::chrono::steady_clock::duration stretched(std::chrono::steady_clock::duration deadline);

} // namespace corio::test
