#include "corio/detail/service_capacity.hpp"

namespace corio::detail {

std::optional<std::size_t> parse_service_capacity(const char* text, std::size_t fallback) noexcept {
    if (text == nullptr || *text == '\0')
        return fallback;
    std::size_t value = 0;
    for (const char* p = text; *p != '\0'; ++p) {
        if (*p < '0' || *p > '9')
            return std::nullopt;
        value = value * 10 + static_cast<std::size_t>(*p - '0');
        // Checked at every digit, so that a long number cannot wrap around.
        if (value > max_service_capacity)
            return std::nullopt;
    }
    if (value == 0)
        return std::nullopt;
    return value;
}

} // namespace corio::detail
