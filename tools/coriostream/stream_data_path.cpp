#include "stream_data_path.hpp"

#include <array>
#include <utility>

#include "run_error.hpp"

namespace coriostream {

namespace {
// rstream's sync_test moves 16 bytes each way before every test.
constexpr std::size_t sync_size = 16;
} // namespace

stream_data_path::stream_data_path(const transfer_context& context)
    : context_(context), send_call_(call_name(context.transport, "send")),
      recv_call_(call_name(context.transport, "recv")) {}

std::optional<boost::asio::awaitable<void>>
stream_data_path::try_xfer(io_call what, std::size_t size, bool timed) {
    const auto data = context_.buffer.first(size);
    if (what == io_call::write && context_.verify)
        context_.pattern.format(data);
    std::size_t done = 0;
    boost::system::error_code ec;
    if (!try_all(context_.stream, what, data, 0, done, ec,
                 attempts_before_wait(context_.polling)))
        return xfer_rest(what, data, timed, done);
    end_xfer(what, data, timed, ec);
    return std::nullopt;
}

boost::asio::awaitable<void> stream_data_path::xfer_rest(io_call what,
                                                         std::span<std::uint8_t> data, bool timed,
                                                         std::size_t done) {
    const auto ec = co_await rest_of_all(context_.stream, what, data, 0, done);
    end_xfer(what, data, timed, ec);
}

void stream_data_path::end_xfer(io_call what, std::span<std::uint8_t> data, bool timed,
                                const boost::system::error_code& ec) {
    if (ec)
        throw_transfer_error(context_, ec, what == io_call::write ? send_call_ : recv_call_);
    context_.watchdog.note_progress();
    if (timed)
        context_.progress.add(1);
    if (what == io_call::read && context_.verify) {
        if (const auto failed_at = context_.pattern.verify(data))
            throw run_error("data verification failed byte " + std::to_string(*failed_at));
    }
}

boost::asio::awaitable<transfer_timing> stream_data_path::run_test(const test_case& test) {
    // The client sends first, the server answers.
    const auto order = context_.is_client ? std::array{io_call::write, io_call::read}
                                          : std::array{io_call::read, io_call::write};
    // rstream's sync_test: 16 bytes each way, untimed.
    for (const auto what : order) {
        if (auto rest = try_xfer(what, sync_size, false))
            co_await std::move(*rest);
    }
    transfer_timing timing{};
    timing.start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < test.iterations; ++i) {
        for (const auto what : order) {
            for (std::size_t t = 0; t < test.transfer_count; ++t) {
                // The call nearly always goes through at once: no coroutine
                // is made for it then.
                if (auto rest = try_xfer(what, test.transfer_size, true))
                    co_await std::move(*rest);
            }
        }
    }
    timing.end = std::chrono::steady_clock::now();
    co_return timing;
}

} // namespace coriostream
