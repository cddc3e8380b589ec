#include "runner.hpp"

#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <corio/network_allow_list.hpp>
#include <corio/resolver.hpp>
#include <corio/rpoll_service.hpp>

#include "lockstep_barrier.hpp"
#include "run_error.hpp"
#include "stream_group.hpp"

namespace coriostream {

namespace {

std::string message_of(const std::exception_ptr& error) {
    try {
        std::rethrow_exception(error);
    } catch (const std::exception& e) {
        return e.what();
    } catch (...) {
        return "unknown error";
    }
}

int io_threads(const options& opts) {
    return static_cast<int>(opts.threads);
}

} // namespace

runner::runner(const options& opts, const run_settings& settings, report_writer& report)
    : opts_(opts), settings_(settings), report_(report), plan_(make_test_plan(opts)),
      session_settings_{settings.transport, settings.data_path, settings.notify, settings.polling,
                        opts.verify,        settings.sharing,   opts.timeout},
      client_patterns_(opts.streams), server_patterns_(opts.streams),
      io_context_(io_threads(opts)),
      progress_(connection_executor(), isatty(STDERR_FILENO) == 1),
      no_progress_(io_context_.get_executor(), false) {}

void runner::run() {
    corio::set_poll_mode(io_context_, settings_.polling);
    corio::rpoll_service_of(io_context_.get_executor()).set_spin_budget(settings_.spin_budget);
    // Every helper thread starts before the test does, so that a thread the
    // system refuses ends the run before any row, not after some.
    auto idle_helpers = boost::asio::make_work_guard(io_context_);
    std::vector<std::thread> helpers;
    try {
        for (int i = 1; i < io_threads(opts_); ++i)
            helpers.emplace_back([this] { io_context_.run(); });
    } catch (const std::system_error& error) {
        // Join the ones started: a joinable std::thread destroyed ends the
        // process.
        idle_helpers.reset();
        for (auto& helper : helpers)
            helper.join();
        throw run_error("cannot start I/O thread " + std::to_string(helpers.size() + 2) + " of " +
                        std::to_string(io_threads(opts_)) + ": " + error.code().message());
    }
    std::exception_ptr outcome;
    boost::asio::co_spawn(connection_executor(), run_role(),
                          [this, &outcome](std::exception_ptr error) {
                              outcome = error;
                              progress_.stop();
                              // Streams still at work after a failure are
                              // abandoned: the process is about to exit.
                              io_context_.stop();
                          });
    idle_helpers.reset();
    progress_.start();
    io_context_.run();
    for (auto& helper : helpers)
        helper.join();
    if (outcome)
        throw run_error(message_of(outcome));
}

boost::asio::awaitable<void> runner::run_role() {
    if (opts_.loopback)
        co_await run_loopback();
    else if (is_client(opts_))
        co_await run_client();
    else
        co_await run_server();
}

boost::asio::awaitable<runner::endpoints> runner::resolve(const std::string& host, bool passive) {
    const auto executor = co_await boost::asio::this_coro::executor;
    corio::resolver resolver(executor);
    boost::system::error_code ec;
    endpoints found;
    const corio::resolve_query query{settings_.host_format, settings_.lookup};
    if (passive)
        found = co_await resolver.async_resolve_passive(
            host, opts_.port, query, boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    else
        found = co_await resolver.async_resolve(
            host, opts_.port, query, boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    if (ec) {
        const char* call = settings_.lookup == corio::resolve_method::rdma_getaddrinfo
                               ? "rdma_getaddrinfo "
                               : "getaddrinfo ";
        throw run_error(call + (host.empty() ? std::string("*") : host) + ":" + opts_.port +
                        ": " + ec.message());
    }
    co_return found;
}

std::shared_ptr<corio::acceptor> runner::listen(const boost::asio::any_io_executor& executor,
                                                const endpoints& local) {
    // riostream binds the first address getaddrinfo gives, and sets the
    // latency series' options on the listener before its first accept.
    auto listener = std::make_shared<corio::acceptor>(
        open_listener(executor, local.front(), setup_for(plan_.front())));
    if (!opts_.allow.empty()) {
        corio::network_allow_list allowed;
        for (const auto& network : opts_.allow)
            allowed.add(network); // validate() read each already
        listener->set_accept_filter(std::move(allowed));
    }
    if (opts_.max_streams)
        listener->set_max_open_streams(*opts_.max_streams);
    return listener;
}

boost::asio::awaitable<void> runner::run_client() {
    // riostream prints the header before it looks the server up.
    report_.write_header();
    const auto server = co_await resolve(*opts_.server_address, false);
    if (opts_.bind_address) {
        const auto local = co_await resolve(*opts_.bind_address, true);
        client_bind_ = local.front().address();
    }
    for (const auto& connection : plan_)
        co_await run_client_series(connection, server);
}

boost::asio::awaitable<void> runner::run_server() {
    // Every co_await on a line of its own: g++ 12 mis-compiles some inside
    // function arguments.
    const auto executor = co_await boost::asio::this_coro::executor;
    const auto local = co_await resolve(opts_.bind_address.value_or(""), true);
    const auto listener = listen(executor, local);
    // riostream prints the header once it listens.
    report_.write_header();
    co_await serve(listener, true);
}

boost::asio::awaitable<void> runner::run_loopback() {
    const auto executor = co_await boost::asio::this_coro::executor;
    const auto local = co_await resolve(opts_.bind_address.value_or(""), true);
    const auto listener = listen(executor, local);
    endpoints server;
    if (opts_.bind_address) {
        server = co_await resolve(*opts_.bind_address, false);
    } else {
        // The listener took -p, which may be a service name: dial the port
        // it really has.
        server.emplace_back(boost::asio::ip::make_address_v4("127.0.0.1"),
                            listener->local_endpoint().port());
    }
    report_.write_header();

    // The server half runs beside the client half, on this strand; the run
    // ends when both have, or when either fails.
    const auto server_done = std::make_shared<lockstep_barrier>(2);
    failures_.on_failure([server_done] { server_done->break_barrier(); });
    boost::asio::co_spawn(executor, serve_loopback(listener, server_done), record_failure({}));
    for (const auto& connection : plan_)
        co_await run_client_series(connection, server);
    const bool everyone_arrived = co_await server_done->arrive_and_wait();
    if (!everyone_arrived)
        throw run_error(failures_.message());
}

boost::asio::awaitable<void> runner::serve_loopback(std::shared_ptr<corio::acceptor> listener,
                                                    std::shared_ptr<lockstep_barrier> done) {
    co_await serve(std::move(listener), false);
    co_await done->arrive_and_wait();
}

boost::asio::awaitable<void> runner::run_client_series(const connection_plan& plan,
                                                       endpoints server) {
    const auto group = make_group(true);
    for (std::size_t stream = 0; stream < opts_.streams; ++stream)
        boost::asio::co_spawn(connection_executor(), run_client_stream(stream, plan, server, group),
                              record_failure(stream));
    co_await group->wait_all();
}

boost::asio::awaitable<void> runner::run_client_stream(std::size_t stream,
                                                       const connection_plan& plan,
                                                       endpoints server,
                                                       std::shared_ptr<stream_group> group) {
    const auto executor = co_await boost::asio::this_coro::executor;
    auto connected = co_await connect_stream(executor, server, setup_for(plan), opts_.timeout);
    session connection(std::move(connected), true, session_settings_,
                       pattern_for(client_patterns_, stream), progress_);
    co_await connection.run(plan, *group);
    co_await group->leave();
}

boost::asio::awaitable<void> runner::serve(std::shared_ptr<corio::acceptor> listener,
                                           bool reports) {
    // The first client may take its time, as with riostream; once it has
    // come, every further connection is part of its run, and is waited for
    // no longer than --timeout.
    auto accept_timeout = std::chrono::seconds::zero();
    for (const auto& connection : plan_) {
        const auto group = make_group(reports);
        for (std::size_t stream = 0; stream < opts_.streams; ++stream) {
            const auto strand = connection_executor();
            auto accepted = co_await accept_stream(*listener, strand, setup_for(connection),
                                                   accept_timeout);
            accept_timeout = opts_.timeout;
            boost::asio::co_spawn(strand,
                                  run_server_stream(stream, std::move(accepted), connection,
                                                    group, reports),
                                  record_failure(stream));
        }
        co_await group->wait_all();
    }
}

boost::asio::awaitable<void> runner::run_server_stream(std::size_t stream,
                                                       corio::stream connection,
                                                       const connection_plan& plan,
                                                       std::shared_ptr<stream_group> group,
                                                       bool reports) {
    session accepted(std::move(connection), false, session_settings_,
                     pattern_for(server_patterns_, stream), reports ? progress_ : no_progress_);
    co_await accepted.run(plan, *group);
    co_await group->leave();
}

boost::asio::any_io_executor runner::connection_executor() {
    // With one I/O thread every handler already runs in turn, and a strand
    // only adds its own queue and lock to every post and resumption: on the
    // iomap path, where each transfer is one riowrite, one completion and a
    // marker watched between yields, that was a measurable share of the
    // instructions per transfer (doc/performance.md).
    if (io_threads(opts_) == 1)
        return io_context_.get_executor();
    return boost::asio::make_strand(io_context_);
}

std::shared_ptr<stream_group> runner::make_group(bool reports) {
    std::function<void(const test_result&)> on_row;
    if (reports) {
        on_row = [this](const test_result& row) {
            progress_.end_row();
            report_.write(row);
        };
    }
    return std::make_shared<stream_group>(opts_.streams, failures_,
                                          reports ? progress_ : no_progress_, std::move(on_row));
}

socket_setup runner::setup_for(const connection_plan& plan) const {
    return {settings_.transport, opts_.buffer_size, plan.inline_size,
            settings_.data_path == data_path_kind::iomap, opts_.keepalive_seconds, client_bind_};
}

data_pattern& runner::pattern_for(std::vector<data_pattern>& patterns, std::size_t stream) {
    // One stream's counters continue from one connection to the next, as
    // common.c's do in a riostream process. With several streams the server
    // cannot tell which new connection continues which stream, so each
    // connection starts afresh on both ends.
    if (opts_.streams > 1)
        patterns[stream] = data_pattern{};
    return patterns[stream];
}

std::function<void(std::exception_ptr)>
runner::record_failure(std::optional<std::size_t> stream) {
    return [this, stream](std::exception_ptr error) {
        if (!error)
            return;
        const auto prefix = stream && opts_.streams > 1
                                ? "stream " + std::to_string(*stream + 1) + ": "
                                : std::string();
        failures_.fail(prefix + message_of(error));
    };
}

} // namespace coriostream
