#include "transfer_context.hpp"

#include <boost/asio/error.hpp>

#include <corio/error.hpp>
#include <corio/memlock_limit.hpp>

#include "run_error.hpp"

namespace coriostream {

std::string call_name(corio::transport transport, std::string_view call) {
    return (transport == corio::transport::rsocket ? "r" : "") + std::string(call);
}

void throw_transfer_error(const transfer_context& context, const boost::system::error_code& ec,
                          std::string_view call) {
    if (context.watchdog.expired())
        throw run_error("timed out: no progress from the peer for " +
                        std::to_string(context.watchdog.timeout().count()) + " s (--timeout)");
    if (ec == boost::asio::error::eof)
        throw run_error(std::string(call) + ": the peer closed the connection");
    if (ec == boost::system::errc::not_enough_memory)
        throw run_error(std::string(call) + ": " + corio::memlock_diagnostic());
    // Over tcp only the iomap path frames its bytes (corio's emulation of
    // riomap and riowrite, whose hello the peer's first bytes failed);
    // unframed bytes come from a peer on the stream path, or from rstream.
    if (ec == corio::error::protocol_error)
        throw run_error(std::string(call) + ": " + ec.message() + ": " +
                        std::string(stream_peer_question));
    throw run_error(std::string(call) + ": " + ec.message());
}

} // namespace coriostream
