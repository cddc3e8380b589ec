#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include <boost/system/error_code.hpp>

#include <corio/poll_mode.hpp>
#include <corio/stream.hpp>
#include <corio/transport.hpp>

#include "data_pattern.hpp"
#include "options.hpp"
#include "peer_watchdog.hpp"
#include "progress_meter.hpp"
#include "thread_sharing.hpp"

namespace coriostream {

/// What a data path borrows from the session that owns the connection.
struct transfer_context {
    corio::stream& stream;
    corio::transport transport;
    /// riostream's dst_addr: the client sends first, the server answers.
    bool is_client;
    bool verify;
    corio::poll_mode polling;
    /// session_settings::sharing.
    thread_sharing sharing;
    notify_method notify;
    data_pattern& pattern;
    peer_watchdog& watchdog;
    progress_meter& progress;
    /// The session's transfer buffer, as large as its largest test.
    std::span<std::uint8_t> buffer;
};

/// The name riostream's perror gives a call: "rsend" on rsockets, "send" on
/// kernel sockets.
std::string call_name(corio::transport transport, std::string_view call);

/// What an iomap end's error asks when the peer's bytes or offers look like
/// the stream data path's: riomap finding no iomap slot, and over tcp a
/// hello that failed on unframed bytes.
inline constexpr std::string_view stream_peer_question =
    "is the peer running the stream data path (--data-path stream, rstream)? Both ends need the "
    "same --data-path";

/// Throws run_error for a failed `call`: a timeout when the watchdog gave up
/// on the peer, a closed connection in plain words, else "call: reason".
[[noreturn]] void throw_transfer_error(const transfer_context& context,
                                       const boost::system::error_code& ec,
                                       std::string_view call);

} // namespace coriostream
