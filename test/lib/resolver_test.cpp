#define BOOST_TEST_MODULE resolver
#include <boost/test/unit_test.hpp>

#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <netdb.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/system_error.hpp>

#include <corio/error.hpp>
#include <corio/rdma_available.hpp>
#include <corio/resolver.hpp>

#include "skip_if.hpp"

// Only loopback and wildcard addresses are looked up: numeric ones, and
// "localhost", which /etc/hosts answers. No test sends a packet.

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;
using corio::address_format;
using endpoints = std::vector<tcp::endpoint>;

namespace {

/// What one completion handler received.
struct outcome {
    std::optional<error_code> ec;
    endpoints results;

    auto handler() {
        return [this](error_code e, endpoints r) {
            ec = e;
            results = std::move(r);
        };
    }
};

/// Runs one async_resolve with a callback to its end.
outcome resolve_with_callback(std::string_view host, std::string_view service,
                              corio::resolve_query query) {
    asio::io_context context;
    corio::resolver resolver(context);
    outcome out;
    resolver.async_resolve(host, service, query, out.handler());
    context.run();
    BOOST_TEST_REQUIRE(out.ec.has_value(), "the handler never ran");
    return out;
}

tcp::endpoint endpoint(const char* address, unsigned short port) {
    return {asio::ip::make_address(address), port};
}

/// Runs a coroutine on a plain io_context and rethrows what it throws. Not
/// CORIO_COROUTINE_TEST_CASE: that one also starts an rpoll_service, which a
/// resolver has no use for.
void run_coroutine(asio::awaitable<void> (*body)()) {
    asio::io_context context;
    auto done = asio::co_spawn(context, body(), asio::use_future);
    context.run();
    done.get();
}

} // namespace

BOOST_AUTO_TEST_CASE(a_numeric_ipv4_address_under_ip) {
    const auto out = resolve_with_callback("127.0.0.1", "7471", address_format::ip);
    BOOST_TEST_REQUIRE(!*out.ec, out.ec->message());
    BOOST_TEST((out.results == endpoints{endpoint("127.0.0.1", 7471)}));
}

BOOST_AUTO_TEST_CASE(a_numeric_ipv6_address_under_ipv6) {
    const auto out = resolve_with_callback("::1", "7471", address_format::ipv6);
    BOOST_TEST_REQUIRE(!*out.ec, out.ec->message());
    BOOST_TEST((out.results == endpoints{endpoint("::1", 7471)}));
}

BOOST_AUTO_TEST_CASE(localhost_under_name) {
    const auto out = resolve_with_callback("localhost", "7471", address_format::name);
    BOOST_TEST_REQUIRE(!*out.ec, out.ec->message());
    BOOST_TEST_REQUIRE(!out.results.empty());
    for (const auto& e : out.results) {
        BOOST_TEST(e.address().is_loopback(), e);
        BOOST_TEST(e.port() == 7471);
    }
}

BOOST_AUTO_TEST_CASE(numeric_addresses_under_name) {
    const auto v4 = resolve_with_callback("127.0.0.1", "1", address_format::name);
    BOOST_TEST_REQUIRE(!*v4.ec, v4.ec->message());
    BOOST_TEST((v4.results == endpoints{endpoint("127.0.0.1", 1)}));
    const auto v6 = resolve_with_callback("::1", "65535", address_format::name);
    BOOST_TEST_REQUIRE(!*v6.ec, v6.ec->message());
    BOOST_TEST((v6.results == endpoints{endpoint("::1", 65535)}));
}

namespace {

// /etc/services comes with Debian's netbase, which a minimal root may lack.
std::optional<std::string> no_ssh_service_entry() {
    if (::getservbyname("ssh", "tcp") != nullptr)
        return std::nullopt;
    return "no /etc/services entry for ssh here (package netbase)";
}

} // namespace

BOOST_AUTO_TEST_CASE(a_service_name_is_looked_up_in_etc_services,
                     *corio::test::skip_if(no_ssh_service_entry)) {
    asio::io_context context;
    corio::resolver resolver(context);
    error_code ec;
    const auto results = resolver.resolve("127.0.0.1", "ssh", address_format::ip, ec);
    BOOST_TEST_REQUIRE(!ec, ec.message());
    BOOST_TEST((results == endpoints{endpoint("127.0.0.1", 22)}));
}

BOOST_AUTO_TEST_CASE(names_are_refused_under_numeric_formats) {
    auto out = resolve_with_callback("localhost", "7471", address_format::ip);
    BOOST_TEST((*out.ec == asio::error::host_not_found), out.ec->message());
    BOOST_TEST(out.results.empty());

    out = resolve_with_callback("localhost", "7471", address_format::ipv6);
    BOOST_TEST(out.ec->failed());
    BOOST_TEST(out.results.empty());
}

BOOST_AUTO_TEST_CASE(a_numeric_address_of_the_other_family_is_refused) {
    auto out = resolve_with_callback("::1", "7471", address_format::ip);
    BOOST_TEST(out.ec->failed());
    BOOST_TEST(out.results.empty());

    out = resolve_with_callback("127.0.0.1", "7471", address_format::ipv6);
    BOOST_TEST(out.ec->failed());
    BOOST_TEST(out.results.empty());
}

BOOST_AUTO_TEST_CASE(an_unknown_service_is_an_error) {
    const auto out =
        resolve_with_callback("127.0.0.1", "no-such-service-corio", address_format::ip);
    BOOST_TEST((*out.ec == asio::error::service_not_found), out.ec->message());
    BOOST_TEST(out.results.empty());
}

BOOST_AUTO_TEST_CASE(getaddrinfo_cannot_read_a_gid_and_says_so_through_the_executor) {
    asio::io_context context;
    corio::resolver resolver(context);
    outcome out;
    resolver.async_resolve("fe80::1", "7471", address_format::gid, out.handler());
    BOOST_TEST(!out.ec.has_value()); // never inside the initiating function
    context.run();
    BOOST_TEST_REQUIRE(out.ec.has_value());
    BOOST_TEST((*out.ec == asio::error::operation_not_supported), out.ec->message());
    BOOST_TEST(out.results.empty());
}

BOOST_AUTO_TEST_CASE(an_empty_host_is_loopback_for_clients_and_the_wildcard_for_servers) {
    asio::io_context context;
    corio::resolver resolver(context);
    BOOST_TEST((resolver.resolve("", "7471", address_format::ip) ==
                endpoints{endpoint("127.0.0.1", 7471)}));
    BOOST_TEST((resolver.resolve_passive("", "7471", address_format::ip) ==
                endpoints{endpoint("0.0.0.0", 7471)}));
    BOOST_TEST((resolver.resolve_passive("", "7471", address_format::ipv6) ==
                endpoints{endpoint("::", 7471)}));
    // A bind address makes passive the same as a client lookup.
    BOOST_TEST((resolver.resolve_passive("127.0.0.1", "7471", address_format::ip) ==
                endpoints{endpoint("127.0.0.1", 7471)}));

    const auto any = resolver.resolve_passive("", "7471", address_format::name);
    BOOST_TEST_REQUIRE(!any.empty());
    for (const auto& e : any) {
        BOOST_TEST(e.address().is_unspecified(), e);
        BOOST_TEST(e.port() == 7471);
    }
}

BOOST_AUTO_TEST_CASE(async_resolve_passive_gives_the_wildcard) {
    asio::io_context context;
    corio::resolver resolver(context);
    outcome out;
    resolver.async_resolve_passive("", "7471", address_format::ip, out.handler());
    context.run();
    BOOST_TEST_REQUIRE(out.ec.has_value());
    BOOST_TEST_REQUIRE(!*out.ec, out.ec->message());
    BOOST_TEST((out.results == endpoints{endpoint("0.0.0.0", 7471)}));
}

BOOST_AUTO_TEST_CASE(the_synchronous_forms_throw_or_report) {
    asio::io_context context;
    corio::resolver resolver(context);
    BOOST_TEST((resolver.resolve("127.0.0.1", "80", address_format::ip) ==
                endpoints{endpoint("127.0.0.1", 80)}));
    error_code ec;
    BOOST_TEST(resolver.resolve("localhost", "80", address_format::ip, ec).empty());
    BOOST_TEST((ec == asio::error::host_not_found), ec.message());
    BOOST_TEST(resolver.resolve("x", "80", address_format::gid, ec).empty());
    BOOST_TEST((ec == asio::error::operation_not_supported), ec.message());
    BOOST_CHECK_EXCEPTION(resolver.resolve("localhost", "80", address_format::ip),
                          boost::system::system_error, [](const boost::system::system_error& e) {
                              return e.code() == asio::error::host_not_found;
                          });
    BOOST_CHECK_EXCEPTION(resolver.resolve_passive("", "80", address_format::gid),
                          boost::system::system_error, [](const boost::system::system_error& e) {
                              return e.code() == asio::error::operation_not_supported;
                          });
}

namespace {

asio::awaitable<void> resolve_with_use_awaitable() {
    corio::resolver resolver(co_await asio::this_coro::executor);
    const auto results = co_await resolver.async_resolve("127.0.0.1", "7471", address_format::ip,
                                                         asio::use_awaitable);
    BOOST_TEST((results == endpoints{endpoint("127.0.0.1", 7471)}));

    const auto [ec, none] = co_await resolver.async_resolve("x", "7471", address_format::gid,
                                                            asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((ec == asio::error::operation_not_supported));
    BOOST_TEST(none.empty());

    bool threw = false;
    try {
        co_await resolver.async_resolve("localhost", "7471", address_format::ip,
                                        asio::use_awaitable);
    } catch (const boost::system::system_error& e) {
        threw = e.code() == asio::error::host_not_found;
    }
    BOOST_TEST(threw);
}

asio::awaitable<void> resolve_with_an_awaitable_default_token() {
    using awaitable_resolver = asio::use_awaitable_t<>::as_default_on_t<corio::resolver>;
    awaitable_resolver resolver(co_await asio::this_coro::executor);
    const auto results = co_await resolver.async_resolve("::1", "7471", address_format::ipv6);
    BOOST_TEST((results == endpoints{endpoint("::1", 7471)}));
}

} // namespace

BOOST_AUTO_TEST_CASE(works_with_use_awaitable) { run_coroutine(resolve_with_use_awaitable); }

BOOST_AUTO_TEST_CASE(works_with_an_awaitable_default_token) {
    run_coroutine(resolve_with_an_awaitable_default_token);
}

BOOST_AUTO_TEST_CASE(works_with_use_future_on_a_running_context) {
    asio::io_context context;
    auto work = asio::make_work_guard(context);
    std::thread runner([&] { context.run(); });
    {
        corio::resolver resolver(context);
        auto found = resolver.async_resolve("127.0.0.1", "7471", address_format::ip,
                                            asio::use_future);
        BOOST_TEST((found.get() == endpoints{endpoint("127.0.0.1", 7471)}));

        auto refused =
            resolver.async_resolve("localhost", "7471", address_format::ip, asio::use_future);
        BOOST_CHECK_THROW(refused.get(), boost::system::system_error);
    }
    work.reset();
    runner.join();
}

BOOST_AUTO_TEST_CASE(works_with_deferred_and_copies_its_strings) {
    asio::io_context context;
    corio::resolver resolver(context);
    auto host = std::make_unique<std::string>("127.0.0.1");
    auto service = std::make_unique<std::string>("7471");
    auto op = resolver.async_resolve(*host, *service, address_format::ip, asio::deferred);
    host.reset(); // the views given to async_resolve now dangle
    service.reset();
    context.run();
    outcome out;
    BOOST_TEST(!out.ec.has_value()); // a deferred operation starts when launched
    std::move(op)(out.handler());
    context.restart();
    context.run();
    BOOST_TEST_REQUIRE(out.ec.has_value());
    BOOST_TEST_REQUIRE(!*out.ec, out.ec->message());
    BOOST_TEST((out.results == endpoints{endpoint("127.0.0.1", 7471)}));
}

BOOST_AUTO_TEST_CASE(the_handler_runs_on_its_associated_executor) {
    asio::io_context context;
    auto strand = asio::make_strand(context);
    corio::resolver resolver(context);
    bool on_strand = false;
    bool ran = false;
    resolver.async_resolve("127.0.0.1", "7471", address_format::ip,
                           asio::bind_executor(strand, [&](error_code, endpoints) {
                               ran = true;
                               on_strand = strand.running_in_this_thread();
                           }));
    context.run();
    BOOST_TEST(ran);
    BOOST_TEST(on_strand);
}

BOOST_AUTO_TEST_CASE(per_operation_cancellation_gives_operation_aborted) {
    // Emitting before the context runs makes the race with getaddrinfo's
    // thread irrelevant: a cancelled operation reports operation_aborted
    // whether or not the lookup had finished.
    for (const auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                            asio::cancellation_type::total}) {
        asio::io_context context;
        corio::resolver resolver(context);
        asio::cancellation_signal signal;
        outcome out;
        resolver.async_resolve("127.0.0.1", "7471", address_format::ip,
                               asio::bind_cancellation_slot(signal.slot(), out.handler()));
        signal.emit(type);
        context.run();
        BOOST_TEST_REQUIRE(out.ec.has_value());
        BOOST_TEST((*out.ec == asio::error::operation_aborted), out.ec->message());
        BOOST_TEST(out.results.empty());
    }
}

BOOST_AUTO_TEST_CASE(per_operation_cancellation_leaves_other_operations_alone) {
    asio::io_context context;
    corio::resolver resolver(context);
    asio::cancellation_signal signal;
    outcome cancelled;
    outcome kept;
    resolver.async_resolve("127.0.0.1", "7471", address_format::ip,
                           asio::bind_cancellation_slot(signal.slot(), cancelled.handler()));
    resolver.async_resolve("::1", "7471", address_format::ipv6, kept.handler());
    signal.emit(asio::cancellation_type::terminal);
    context.run();
    BOOST_TEST((*cancelled.ec == asio::error::operation_aborted), cancelled.ec->message());
    BOOST_TEST_REQUIRE(!*kept.ec, kept.ec->message());
    BOOST_TEST((kept.results == endpoints{endpoint("::1", 7471)}));
}

BOOST_AUTO_TEST_CASE(a_signal_emitted_after_completion_is_harmless) {
    asio::io_context context;
    asio::cancellation_signal signal;
    outcome out;
    {
        corio::resolver resolver(context);
        resolver.async_resolve("127.0.0.1", "7471", address_format::ip,
                               asio::bind_cancellation_slot(signal.slot(), out.handler()));
        context.run();
    }
    BOOST_TEST_REQUIRE(!*out.ec, out.ec->message());
    signal.emit(asio::cancellation_type::terminal); // the resolver is gone
}

BOOST_AUTO_TEST_CASE(cancel_aborts_every_outstanding_operation) {
    asio::io_context context;
    corio::resolver resolver(context);
    outcome first;
    outcome second;
    resolver.async_resolve("127.0.0.1", "7471", address_format::ip, first.handler());
    resolver.async_resolve_passive("", "7471", address_format::ip, second.handler());
    resolver.cancel();
    outcome later;
    resolver.async_resolve("127.0.0.1", "7471", address_format::ip, later.handler());
    context.run();
    BOOST_TEST((*first.ec == asio::error::operation_aborted), first.ec->message());
    BOOST_TEST((*second.ec == asio::error::operation_aborted), second.ec->message());
    BOOST_TEST(first.results.empty());
    // An operation started after cancel() is not affected.
    BOOST_TEST_REQUIRE(!*later.ec, later.ec->message());
    BOOST_TEST((later.results == endpoints{endpoint("127.0.0.1", 7471)}));
}

BOOST_AUTO_TEST_CASE(destroying_the_resolver_aborts_its_operations) {
    asio::io_context context;
    outcome out;
    {
        corio::resolver resolver(context);
        resolver.async_resolve("127.0.0.1", "7471", address_format::ip, out.handler());
    }
    context.run();
    BOOST_TEST_REQUIRE(out.ec.has_value());
    BOOST_TEST((*out.ec == asio::error::operation_aborted), out.ec->message());
}

BOOST_AUTO_TEST_CASE(a_moved_resolver_keeps_its_operations) {
    asio::io_context context;
    corio::resolver first(context);
    outcome out;
    first.async_resolve("127.0.0.1", "7471", address_format::ip, out.handler());
    corio::resolver second(std::move(first));
    context.run();
    BOOST_TEST_REQUIRE(!*out.ec, out.ec->message());
    BOOST_TEST((second.get_executor() == corio::resolver::executor_type(context.get_executor())));
}

namespace {

std::optional<std::string> an_rdma_device_exists() {
    if (!corio::rdma_available())
        return std::nullopt;
    return "this host has an RDMA device (resolver_rdma_test covers it)";
}

} // namespace

// rdma_getaddrinfo needs an RDMA device before it looks anything up: the
// error says so, through either call, and matches corio's condition.
BOOST_AUTO_TEST_CASE(rdma_getaddrinfo_without_an_rdma_device_says_so,
                     *corio::test::skip_if(an_rdma_device_exists)) {
    const corio::resolve_query query{address_format::ip, corio::resolve_method::rdma_getaddrinfo};
    asio::io_context context;
    corio::resolver resolver(context);
    error_code ec;
    BOOST_TEST(resolver.resolve("127.0.0.1", "7471", query, ec).empty());
    BOOST_TEST((ec == corio::condition::no_rdma_device), ec.message());
    auto out = resolve_with_callback("127.0.0.1", "7471", query);
    BOOST_TEST_REQUIRE(out.ec.has_value());
    BOOST_TEST((*out.ec == corio::condition::no_rdma_device), out.ec->message());
    BOOST_TEST(out.results.empty());
}
