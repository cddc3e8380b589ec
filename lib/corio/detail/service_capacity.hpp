#pragma once

#include <cstddef>
#include <optional>

namespace corio::detail {

/// The most rsockets a capacity variable may ask for: librdmacm numbers its
/// rsockets with the indices of its index map, below 2^16 (IDX_MAX_INDEX in
/// v44's indexer.h), so no process can have more.
inline constexpr std::size_t max_service_capacity = 65535;

/// The room asked for in the text of CORIO_RSOCKET_CM_CAPACITY or
/// CORIO_RSOCKET_LISTEN_CAPACITY (doc/architecture.md): `fallback` when the
/// variable is unset (null) or empty, a whole number from 1 to
/// max_service_capacity as written (decimal digits only), or nullopt for
/// anything else. A value that is not taken as written is refused rather
/// than read as something else: the room is primed before the first
/// connection, a thread start per 4 places, so a mistyped "1000000" or
/// "-1" must not become half an hour of priming, or the default, without
/// a word.
std::optional<std::size_t> parse_service_capacity(const char* text, std::size_t fallback) noexcept;

} // namespace corio::detail
