#include "session.hpp"

#include <algorithm>
#include <memory>
#include <utility>

#include <boost/system/error_code.hpp>

#include "iomap_data_path.hpp"
#include "peer_watchdog.hpp"
#include "run_error.hpp"
#include "stream_data_path.hpp"
#include "transfer_context.hpp"

namespace coriostream {

namespace {

// rstream's handshake moves 16 bytes through the transfer buffer.
constexpr std::size_t smallest_buffer = 16;

std::size_t largest_transfer(const connection_plan& plan) {
    std::size_t largest = smallest_buffer;
    for (const auto& test : plan.tests)
        largest = std::max(largest, test.transfer_size);
    return largest;
}

std::unique_ptr<data_path> make_data_path(data_path_kind kind, const transfer_context& context) {
    if (kind == data_path_kind::iomap)
        return std::make_unique<iomap_data_path>(context);
    return std::make_unique<stream_data_path>(context);
}

} // namespace

session::session(corio::stream stream, bool is_client, const session_settings& settings,
                 data_pattern& pattern, progress_meter& progress)
    : stream_(std::move(stream)), is_client_(is_client), settings_(settings), pattern_(pattern),
      progress_(progress) {}

boost::asio::awaitable<void> session::run(const connection_plan& plan, stream_group& group) {
    buffer_.assign(largest_transfer(plan), 0);
    // The data paths try each call first and wait only when it would block
    // (try_first_io.hpp): the stream stays in non_blocking mode for the
    // whole run, set here once instead of checked before every call.
    boost::system::error_code ec;
    stream_.non_blocking(true, ec);
    if (ec)
        throw run_error("non_blocking: " + ec.message());
    for (std::size_t index = 0; index < plan.tests.size(); ++index) {
        const auto& test = plan.tests[index];
        co_await group.start_test(index, test);
        // Watched only while the test runs: the wait above is for this
        // side's other streams, each watched by its own watchdog.
        peer_watchdog watchdog(stream_.get_executor(), settings_.timeout, [this] {
            // No shutdown: on rsockets it would wait for sends to a peer
            // that has stopped answering.
            boost::system::error_code ignored;
            stream_.close(ignored);
        });
        const transfer_context context{stream_,
                                       settings_.transport,
                                       is_client_,
                                       settings_.verify,
                                       settings_.polling,
                                       settings_.sharing,
                                       settings_.notify,
                                       pattern_,
                                       watchdog,
                                       progress_,
                                       buffer_};
        const auto path = make_data_path(settings_.data_path, context);
        const auto timing = co_await path->run_test(test);
        group.finish_test(index, test, timing);
    }
    close();
}

void session::close() noexcept {
    // riostream ends a connection with rshutdown with SHUT_RDWR, then rclose; on
    // rsockets the shutdown also waits for the last sends to complete.
    boost::system::error_code ignored;
    if (stream_.is_open())
        stream_.shutdown(corio::stream::shutdown_both, ignored);
    stream_.close(ignored);
}

} // namespace coriostream
