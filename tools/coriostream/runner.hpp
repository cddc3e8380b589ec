#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <corio/acceptor.hpp>

#include "connection_setup.hpp"
#include "data_pattern.hpp"
#include "failure_latch.hpp"
#include "lockstep_barrier.hpp"
#include "options.hpp"
#include "progress_meter.hpp"
#include "report.hpp"
#include "run_settings.hpp"
#include "session.hpp"
#include "test_plan.hpp"

namespace coriostream {

/// Runs the test plan over real connections in one of riostream's roles: the
/// client (-s), the server, or both in this process (--loopback), with
/// --streams connections per series on an io_context run by --threads
/// threads, each connection on its own strand (with more than one thread).
///
/// Like riostream, each side makes one connection per series (two for the
/// default series, one for a custom test) and the server exits after its
/// client's last series.
class runner {
public:
    /// Expects validated options and their settled settings. Rows go to
    /// `report` as they complete.
    runner(const options& opts, const run_settings& settings, report_writer& report);

    runner(const runner&) = delete;
    runner& operator=(const runner&) = delete;

    /// Runs everything to the end. Throws run_error with the first failure.
    void run();

private:
    using endpoints = std::vector<boost::asio::ip::tcp::endpoint>;

    boost::asio::awaitable<void> run_role();
    boost::asio::awaitable<void> run_client();
    boost::asio::awaitable<void> run_server();
    boost::asio::awaitable<void> run_loopback();

    boost::asio::awaitable<endpoints> resolve(const std::string& host, bool passive);
    std::shared_ptr<corio::acceptor> listen(const boost::asio::any_io_executor& executor,
                                            const endpoints& local);

    /// The client's half of one connection_plan: --streams connections, each
    /// running the plan's tests, until all are done.
    boost::asio::awaitable<void> run_client_series(const connection_plan& plan,
                                                   endpoints server);
    boost::asio::awaitable<void> run_client_stream(std::size_t stream,
                                                   const connection_plan& plan, endpoints server,
                                                   std::shared_ptr<stream_group> group);
    /// The server's half of every connection_plan in turn, on `listener`.
    /// `reports` is false for the server of --loopback, whose rows the
    /// client prints.
    boost::asio::awaitable<void> serve(std::shared_ptr<corio::acceptor> listener, bool reports);
    /// serve() for --loopback, then arrives at `done`.
    boost::asio::awaitable<void> serve_loopback(std::shared_ptr<corio::acceptor> listener,
                                                std::shared_ptr<lockstep_barrier> done);
    boost::asio::awaitable<void> run_server_stream(std::size_t stream, corio::stream connection,
                                                   const connection_plan& plan,
                                                   std::shared_ptr<stream_group> group,
                                                   bool reports);

    /// A strand of the io_context for one connection (or the listener, or
    /// the progress line); the io_context's own executor when it has one
    /// thread, where a strand serialises nothing that is not serial already.
    boost::asio::any_io_executor connection_executor();
    std::shared_ptr<stream_group> make_group(bool reports);
    socket_setup setup_for(const connection_plan& plan) const;
    /// -T v's counters for `stream`'s next connection.
    data_pattern& pattern_for(std::vector<data_pattern>& patterns, std::size_t stream);
    /// A completion handler for a coroutine of `stream` (none: the loopback
    /// server) that records its failure.
    std::function<void(std::exception_ptr)> record_failure(std::optional<std::size_t> stream);

    const options& opts_;
    run_settings settings_;
    report_writer& report_;
    std::vector<connection_plan> plan_;
    /// -b in client mode: the address each connection binds (run_client).
    std::optional<boost::asio::ip::address> client_bind_;
    session_settings session_settings_;
    std::vector<data_pattern> client_patterns_;
    std::vector<data_pattern> server_patterns_;
    failure_latch failures_;
    // Declared after everything its handlers use, so that destroying it
    // (which destroys unfinished coroutines) comes first.
    boost::asio::io_context io_context_;
    progress_meter progress_;
    /// For the server of --loopback, which must not move the client's line.
    progress_meter no_progress_;
};

} // namespace coriostream
