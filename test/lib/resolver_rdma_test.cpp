#define BOOST_TEST_MODULE resolver_rdma
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <future>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/system_error.hpp>

#include <corio/error.hpp>
#include <corio/resolver.hpp>

#include "requires_rdma.hpp"

// corio::resolver with resolve_method::rdma_getaddrinfo, which needs an RDMA
// device: run inside the Soft-RoCE guest (the lib suite's resolver_test
// checks the error without one). Lookups are of numeric addresses, the
// guest's own and loopback ones, and "localhost": no packet is sent.

CORIO_TEST_REQUIRES_RDMA();

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;
using corio::address_format;
using corio::resolve_method;
using endpoints = std::vector<tcp::endpoint>;

namespace {

corio::resolve_query rdma_cm(address_format format) {
    return {format, resolve_method::rdma_getaddrinfo};
}

/// One async lookup, run to its end on a context of its own.
endpoints resolve_async(std::string_view host, address_format format, bool passive) {
    asio::io_context context;
    corio::resolver resolver(context);
    auto future = passive ? resolver.async_resolve_passive(host, "7471", rdma_cm(format),
                                                           asio::use_future)
                          : resolver.async_resolve(host, "7471", rdma_cm(format), asio::use_future);
    context.run();
    return future.get();
}

/// The guest's rxe address of one family (guest-run exports both).
std::string guest_address(const char* variable) {
    const char* text = std::getenv(variable);
    BOOST_TEST_REQUIRE(text != nullptr, variable << " is not set (run this in the guest)");
    return text;
}

} // namespace

BOOST_AUTO_TEST_CASE(numeric_addresses_of_both_families_resolve_to_one_endpoint) {
    asio::io_context context;
    corio::resolver resolver(context);
    for (const char* variable : {"CORIO_RDMA_ADDR", "CORIO_RDMA_ADDR6"}) {
        const auto text = guest_address(variable);
        const auto address = asio::ip::make_address(text);
        const auto format = address.is_v6() ? address_format::ipv6 : address_format::ip;
        const endpoints found = resolver.resolve(text, "7471", rdma_cm(format));
        BOOST_TEST_REQUIRE(found.size() == 1u);
        BOOST_TEST(found.front().address() == address);
        BOOST_TEST(found.front().port() == 7471);
        // A name lookup of the same text gives the same.
        BOOST_TEST((resolver.resolve(text, "7471", rdma_cm(address_format::name)) == found));
    }
}

BOOST_AUTO_TEST_CASE(the_async_lookup_completes_on_the_context_with_the_same_answer) {
    const endpoints found = resolve_async("localhost", address_format::name, false);
    BOOST_TEST_REQUIRE(found.size() == 1u);
    BOOST_TEST(found.front().address().is_loopback());
    asio::io_context context;
    corio::resolver resolver(context);
    BOOST_TEST((found == resolver.resolve("localhost", "7471", rdma_cm(address_format::name))));
}

BOOST_AUTO_TEST_CASE(a_passive_lookup_without_a_host_is_the_wildcard) {
    const endpoints found = resolve_async("", address_format::ip, true);
    BOOST_TEST_REQUIRE(found.size() == 1u);
    BOOST_TEST(found.front().address() == asio::ip::make_address("0.0.0.0"));
    BOOST_TEST(found.front().port() == 7471);
}

BOOST_AUTO_TEST_CASE(lookups_fail_as_getaddrinfo_lookups_do) {
    asio::io_context context;
    corio::resolver resolver(context);
    error_code ec;
    // ip takes a numeric host only.
    BOOST_TEST(resolver.resolve("localhost", "7471", rdma_cm(address_format::ip), ec).empty());
    BOOST_TEST((ec == asio::error::host_not_found), ec.message());
    // ipv6 takes no IPv4 address.
    BOOST_TEST(resolver.resolve("127.0.0.1", "7471", rdma_cm(address_format::ipv6), ec).empty());
    BOOST_TEST((ec == asio::error::host_not_found), ec.message());
    BOOST_TEST(resolver.resolve("127.0.0.1", "no-such-service", rdma_cm(address_format::ip), ec)
                   .empty());
    BOOST_TEST((ec == asio::error::service_not_found), ec.message());
    BOOST_CHECK_THROW(resolver.resolve("localhost", "7471", rdma_cm(address_format::ip)),
                      boost::system::system_error);
}

// What rdma_getaddrinfo makes of a GID is an AF_IB address, which no IP
// endpoint holds; Soft-RoCE could not bind it either (riostream -f gid:
// "rbind: No such device", doc/architecture.md).
BOOST_AUTO_TEST_CASE(a_gid_is_read_and_refused_as_an_infiniband_address) {
    asio::io_context context;
    corio::resolver resolver(context);
    error_code ec;
    BOOST_TEST(resolver.resolve("fe80::1", "7471", rdma_cm(address_format::gid), ec).empty());
    BOOST_TEST((ec == corio::error::ib_address_unsupported), ec.message());
    try {
        resolve_async("fd00:77::1", address_format::gid, false);
        BOOST_ERROR("a GID resolved to an endpoint");
    } catch (const boost::system::system_error& error) {
        BOOST_TEST((error.code() == corio::error::ib_address_unsupported), error.what());
    }
    // getaddrinfo cannot read a GID at all.
    BOOST_TEST(resolver.resolve("fe80::1", "7471", address_format::gid, ec).empty());
    BOOST_TEST((ec == asio::error::operation_not_supported), ec.message());
}

BOOST_AUTO_TEST_CASE(a_cancelled_lookup_completes_with_operation_aborted) {
    asio::io_context context;
    corio::resolver resolver(context);
    asio::cancellation_signal signal;
    std::optional<error_code> result;
    endpoints found{tcp::endpoint()};
    resolver.async_resolve("127.0.0.1", "7471", rdma_cm(address_format::ip),
                           asio::bind_cancellation_slot(signal.slot(), [&](error_code ec, endpoints e) {
                               result = ec;
                               found = std::move(e);
                           }));
    signal.emit(asio::cancellation_type::terminal);
    // And resolver.cancel() for another.
    std::optional<error_code> other;
    resolver.async_resolve("127.0.0.1", "7471", rdma_cm(address_format::ip),
                           [&](error_code ec, endpoints) { other = ec; });
    resolver.cancel();
    context.run();
    BOOST_TEST_REQUIRE(result.has_value());
    BOOST_TEST((*result == asio::error::operation_aborted), result->message());
    BOOST_TEST(found.empty());
    BOOST_TEST_REQUIRE(other.has_value());
    BOOST_TEST((*other == asio::error::operation_aborted), other->message());
    // The resolver still works afterwards.
    auto future = resolver.async_resolve("127.0.0.1", "7471", rdma_cm(address_format::ip),
                                         asio::use_future);
    context.restart();
    context.run();
    BOOST_TEST(future.get().size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_context_destroyed_with_a_lookup_pending_drops_it) {
    // The lookup thread is joined at shutdown; the handler is destroyed,
    // never run, as Asio does with a context's pending handlers.
    bool ran = false;
    {
        asio::io_context context;
        corio::resolver resolver(context);
        resolver.async_resolve("localhost", "7471", rdma_cm(address_format::name),
                               [&](error_code, endpoints) { ran = true; });
    }
    BOOST_TEST(!ran);
}
