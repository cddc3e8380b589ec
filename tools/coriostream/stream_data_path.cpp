#include "stream_data_path.hpp"

#include <array>
#include <utility>

#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "run_error.hpp"
#include "test_announcement.hpp"

namespace coriostream {

stream_data_path::stream_data_path(const transfer_context& context)
    : context_(context), send_call_(call_name(context.transport, "send")),
      recv_call_(call_name(context.transport, "recv")),
      attempts_(attempts_before_wait(context.polling, context.sharing)),
      pacing_(context.sharing) {}

// Inline: every transfer ends here, nearly all of them inside try_xfer.
template <io_call what>
inline void stream_data_path::end_xfer(std::span<std::uint8_t> data, bool timed,
                                       const boost::system::error_code& ec) {
    if (ec) [[unlikely]]
        throw_transfer_error(context_, ec, what == io_call::write ? send_call_ : recv_call_);
    context_.watchdog.note_progress();
    if (timed)
        context_.progress.add(1);
    if (what == io_call::read && context_.verify)
        verify_received(data);
}

void stream_data_path::verify_received(std::span<const std::uint8_t> data) const {
    if (const auto failed_at = context_.pattern.verify(data))
        throw run_error("data verification failed byte " + std::to_string(*failed_at));
}

// Always inlined into run_test, with call_once: as calls of their own,
// their frames and the returned optional cost 23 instructions per 64-byte
// transfer (host callgrind, doc/performance.md, session 20; the stream's
// read_some and write_some, inlined too, saved 13 more).
template <io_call what>
[[gnu::always_inline]] inline std::optional<boost::asio::awaitable<boost::system::error_code>>
stream_data_path::try_xfer(std::span<std::uint8_t> data, bool timed) {
    if (what == io_call::write && context_.verify)
        context_.pattern.format(data);
    std::size_t done = 0;
    boost::system::error_code ec;
    if (!try_all(context_.stream, what, data, 0, done, ec, attempts_))
        return rest_of_all(context_.stream, what, data, 0, done);
    end_xfer<what>(data, timed, ec);
    return std::nullopt;
}

boost::asio::awaitable<transfer_timing> stream_data_path::run_test(const test_case& test) {
    const auto executor = co_await boost::asio::this_coro::executor;
    // The client sends first, the server answers.
    const auto order = context_.is_client ? std::array{io_call::write, io_call::read}
                                          : std::array{io_call::read, io_call::write};
    // Round 0 is rstream's sync_test, 16 bytes each way and untimed; the
    // timed iterations follow. It goes through the same loop, so that the
    // loop's code has run once before the timer starts: under emulation
    // code costs milliseconds the first time it runs (QEMU translates it),
    // and a sync of its own left the timed loop's copy of the calls cold,
    // 1.5-2 ms of a 4k_lat row's first iterations (doc/performance.md,
    // session 26).
    // Its bytes announce this end's test (test_announcement), except with
    // -T v, where rstream formats and verifies them as it does every
    // transfer, and so does this loop.
    const auto ours = test_announcement::of(test, data_path_kind::stream, context_.notify,
                                            context_.is_client ? test_announcement::role::client
                                                               : test_announcement::role::server);
    if (!context_.verify)
        sync_out_ = ours.encode();
    const std::span<std::uint8_t> sync_out(sync_out_);
    const std::span<std::uint8_t> sync_in(sync_in_);
    const auto test_data = context_.buffer.first(test.transfer_size);
    transfer_timing timing{};
    for (std::size_t round = 0; round <= test.iterations; ++round) {
        const bool timed = round != 0;
        const std::size_t transfer_count = timed ? test.transfer_count : 1;
        for (const auto what : order) {
            const auto data = timed ? test_data : what == io_call::write ? sync_out : sync_in;
            // One loop per direction, each with its calls known at compile
            // time: a direction tested in every call cost 11 instructions a
            // call (host callgrind, 64-byte transfers,
            // doc/performance.md, session 48).
            if (what == io_call::write) {
                // Only a bandwidth row's writes can fill the peer's window.
                const bool paced = pacing_.active() && transfer_count > 1;
                for (std::size_t t = 0; t < transfer_count; ++t) {
                    // The call nearly always goes through at once: no
                    // coroutine is made for it then, and one that waits is
                    // rest_of_all's alone, not one of this class's around it
                    // as well.
                    if (auto rest = try_xfer<io_call::write>(data, timed)) {
                        const auto ec = co_await std::move(*rest);
                        end_xfer<io_call::write>(data, timed, ec);
                        pacing_.peer_had_turn();
                    } else if (paced && pacing_.turn_due(data.size())) {
                        co_await boost::asio::post(executor, boost::asio::use_awaitable);
                    }
                }
            } else {
                for (std::size_t t = 0; t < transfer_count; ++t) {
                    if (auto rest = try_xfer<io_call::read>(data, timed)) {
                        const auto ec = co_await std::move(*rest);
                        end_xfer<io_call::read>(data, timed, ec);
                        pacing_.peer_had_turn();
                    }
                }
            }
        }
        if (!timed) {
            // Both ends compare after the exchange, so each has the other's
            // announcement and both name the difference.
            if (!context_.verify) {
                if (auto mismatch = announcement_mismatch(sync_in_, ours))
                    throw run_error(*mismatch);
            }
            timing.start = std::chrono::steady_clock::now();
        }
    }
    timing.end = std::chrono::steady_clock::now();
    co_return timing;
}

} // namespace coriostream
