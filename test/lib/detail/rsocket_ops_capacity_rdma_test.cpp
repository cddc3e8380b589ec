#define BOOST_TEST_MODULE rsocket_ops_capacity_rdma
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/socket_base.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <corio/acceptor.hpp>
#include <corio/config.hpp>
#include <corio/error.hpp>
#include <corio/stream.hpp>

#include "coroutine_test.hpp"
#include "transport_under_test.hpp"

// Capacity variables that are not whole numbers from 1 to 65535
// (doc/architecture.md) fail every rsocket connect, accept and listen with
// an error that names the variable, at once: no priming of a room nobody
// asked for, no default taken without a word. The variables are read at the
// process's first rsocket, so this process sets them before it opens one
// and can check only these values; service_capacity_test checks the rest.
// Runs on rsockets, in the guest.

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;

namespace {

struct invalid_capacities {
    invalid_capacities() {
        if (!CORIO_RDMACM_CM_SERVICE_GROWS_UNSAFELY) {
            std::puts("SKIP: this librdmacm's services grow safely; corio reads no capacity");
            std::exit(77);
        }
        ::setenv("CORIO_RSOCKET_CM_CAPACITY", "256x", 1);
        ::setenv("CORIO_RSOCKET_LISTEN_CAPACITY", "0", 1);
        // Only now: the check opens an rsocket. (A second global fixture
        // would not do: Boost.Test orders them by address, not as declared.)
        corio::test::transport_available check;
    }
};

} // namespace

BOOST_TEST_GLOBAL_FIXTURE(invalid_capacities);

CORIO_COROUTINE_TEST_CASE_WITH_DEADLINE(listen_and_connect_fail_with_the_variables_errors, 60s) {
    BOOST_TEST_REQUIRE((corio::test::transport_under_test() == corio::transport::rsocket),
                       "set CORIO_TEST_TRANSPORT=rsocket");
    auto executor = co_await asio::this_coro::executor;

    corio::acceptor acceptor(executor);
    acceptor.open(corio::transport::rsocket, corio::test::any_port_endpoint().protocol());
    acceptor.bind(corio::test::any_port_endpoint());
    error_code listen_ec;
    acceptor.listen(asio::socket_base::max_listen_connections, listen_ec);
    BOOST_TEST((listen_ec == corio::error::rsocket_listen_capacity_invalid), listen_ec.message());
    BOOST_TEST(listen_ec.message().find("CORIO_RSOCKET_LISTEN_CAPACITY") != std::string::npos);

    // Refused before rconnect: no listener is needed, and the connect ends
    // at once instead of waiting for a priming or a peer.
    const auto started = std::chrono::steady_clock::now();
    corio::stream client(executor, corio::transport::rsocket);
    auto [connect_ec] =
        co_await client.async_connect(asio::ip::tcp::endpoint(corio::test::address_under_test(), 9),
                                      asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((connect_ec == corio::error::rsocket_cm_capacity_invalid), connect_ec.message());
    BOOST_TEST(connect_ec.message().find("CORIO_RSOCKET_CM_CAPACITY") != std::string::npos);
    BOOST_TEST((std::chrono::steady_clock::now() - started < 5s));
}
