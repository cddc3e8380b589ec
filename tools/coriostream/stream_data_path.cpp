#include "stream_data_path.hpp"

#include <cstdint>

#include <boost/asio/buffer.hpp>

#include "run_error.hpp"
#include "try_first_io.hpp"

namespace coriostream {

namespace {
// rstream's sync_test moves 16 bytes each way before every test.
constexpr std::size_t sync_size = 16;
} // namespace

stream_data_path::stream_data_path(const transfer_context& context)
    : context_(context), send_call_(call_name(context.transport, "send")),
      recv_call_(call_name(context.transport, "recv")) {}

boost::asio::awaitable<void> stream_data_path::send_xfer(std::size_t size, bool timed) {
    const auto data = context_.buffer.first(size);
    if (context_.verify)
        context_.pattern.format(data);
    if (const auto ec = co_await write_all(context_.stream, boost::asio::buffer(data.data(), size)))
        throw_transfer_error(context_, ec, send_call_);
    context_.watchdog.note_progress();
    if (timed)
        context_.progress.add(1);
}

boost::asio::awaitable<void> stream_data_path::recv_xfer(std::size_t size, bool timed) {
    const auto data = context_.buffer.first(size);
    if (const auto ec = co_await read_all(context_.stream, boost::asio::buffer(data.data(), size)))
        throw_transfer_error(context_, ec, recv_call_);
    context_.watchdog.note_progress();
    if (timed)
        context_.progress.add(1);
    if (context_.verify) {
        if (const auto failed_at = context_.pattern.verify(data))
            throw run_error("data verification failed byte " + std::to_string(*failed_at));
    }
}

boost::asio::awaitable<void> stream_data_path::sync_test() {
    if (context_.is_client) {
        co_await send_xfer(sync_size, false);
        co_await recv_xfer(sync_size, false);
    } else {
        co_await recv_xfer(sync_size, false);
        co_await send_xfer(sync_size, false);
    }
}

boost::asio::awaitable<transfer_timing> stream_data_path::run_test(const test_case& test) {
    co_await sync_test();
    transfer_timing timing{};
    timing.start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < test.iterations; ++i) {
        for (std::size_t t = 0; t < test.transfer_count; ++t) {
            if (context_.is_client)
                co_await send_xfer(test.transfer_size, true);
            else
                co_await recv_xfer(test.transfer_size, true);
        }
        for (std::size_t t = 0; t < test.transfer_count; ++t) {
            if (context_.is_client)
                co_await recv_xfer(test.transfer_size, true);
            else
                co_await send_xfer(test.transfer_size, true);
        }
    }
    timing.end = std::chrono::steady_clock::now();
    co_return timing;
}

} // namespace coriostream
