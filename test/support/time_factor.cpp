#include "time_factor.hpp"

#include <charconv>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

namespace corio::test {

double time_factor() {
    const char* text = std::getenv("CORIO_TEST_TIME_FACTOR");
    if (text == nullptr)
        return 1.0;
    const std::string_view view(text);
    double factor = 0;
    // Digits, or digits, a point and digits, as run-rdma-test reads it:
    // std::from_chars in fixed format, which knows no locale, "inf", "nan"
    // or exponent, and digits at both ends, which it would not insist on.
    const auto digit = [](char c) { return c >= '0' && c <= '9'; };
    const auto [end, error] =
        std::from_chars(view.data(), view.data() + view.size(), factor, std::chars_format::fixed);
    if (view.empty() || !digit(view.front()) || !digit(view.back()) || error != std::errc{} ||
        end != view.data() + view.size() || !(factor >= 1.0) || factor > 100.0)
        throw std::invalid_argument("CORIO_TEST_TIME_FACTOR must be a number from 1 to 100, not '" +
                                    std::string(view) + "'");
    return factor;
}

std::chrono::steady_clock::duration stretched(std::chrono::steady_clock::duration deadline) {
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(deadline *
                                                                           time_factor());
}

} // namespace corio::test
