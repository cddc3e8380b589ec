#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include <corio/poll_mode.hpp>
#include <corio/stream.hpp>
#include <corio/transport.hpp>

#include "data_pattern.hpp"
#include "options.hpp"
#include "progress_meter.hpp"
#include "stream_group.hpp"
#include "test_plan.hpp"
#include "thread_sharing.hpp"

namespace coriostream {

/// What every connection of a run shares.
struct session_settings {
    corio::transport transport = corio::transport::tcp;
    data_path_kind data_path = data_path_kind::iomap;
    notify_method notify = notify_method::marker;
    corio::poll_mode polling = corio::poll_mode::thread;
    bool verify = false;
    /// What shares the stream's threads: it decides how often a busy call is
    /// made again before it waits, and how long a marker wait looks between
    /// yields.
    thread_sharing sharing = thread_sharing::other_streams;
    /// --timeout: how long the peer may make no progress; zero is forever.
    std::chrono::seconds timeout{};
};

/// One connected stream running the tests of one connection_plan, as
/// riostream's run_test loop does between a connect (or accept) and the
/// rshutdown and rclose that end the series.
class session {
public:
    /// `stream` is connected, and its executor is a strand (or a one-thread
    /// io_context's) that run() runs on. `pattern` carries -T v's counters from this stream's previous
    /// connection, if any.
    session(corio::stream stream, bool is_client, const session_settings& settings,
            data_pattern& pattern, progress_meter& progress);

    /// Runs every test of `plan` in step with the rest of `group`, then
    /// shuts the connection down and closes it. Throws run_error.
    boost::asio::awaitable<void> run(const connection_plan& plan, stream_group& group);

private:
    void close() noexcept;

    corio::stream stream_;
    bool is_client_;
    session_settings settings_;
    data_pattern& pattern_;
    progress_meter& progress_;
    std::vector<std::uint8_t> buffer_;
};

} // namespace coriostream
