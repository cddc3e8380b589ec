#define BOOST_TEST_MODULE rsocket_ops_listen_priming_rdma
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include <dlfcn.h>

#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <corio/acceptor.hpp>
#include <corio/config.hpp>
#include <corio/stream.hpp>

#include "background_jobs.hpp"
#include "transport_under_test.hpp"

// Which of librdmacm's service threads a process primes (doc/architecture.md,
// "librdmacm's connection and listen services"): the connection service's
// from its first stream rsocket, the listen service's only from its first
// listen. A process that opens and connects rsockets but never listens (a
// client) must make no rlisten call at all: before session 28 it ran the
// listen service's priming too, an rlisten on a wildcard ephemeral port per
// start. This test counts the process's rlisten calls by defining rlisten
// itself, ahead of librdmacm's; rsocket_ops_confinement_test allows this
// file by name. The process is the test's own: priming happens once per
// process.

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

std::atomic<long> rlisten_calls{0};

/// Listening rsockets the listen service is primed for: its first start
/// holds 4 entries, so this takes one start more.
constexpr int listen_capacity = 8;

struct small_listen_room {
    small_listen_room() {
        if (!CORIO_RDMACM_CM_SERVICE_GROWS_UNSAFELY) {
            std::puts("SKIP: this librdmacm's services grow safely; corio primes neither");
            std::exit(77);
        }
        // Read at the listen room's first use, which comes after this.
        ::setenv("CORIO_RSOCKET_LISTEN_CAPACITY", std::to_string(listen_capacity).c_str(), 1);
    }
};

} // namespace

extern "C" int rlisten(int socket, int backlog) {
    static const auto real = reinterpret_cast<int (*)(int, int)>(::dlsym(RTLD_NEXT, "rlisten"));
    ++rlisten_calls;
    return real(socket, backlog);
}

BOOST_TEST_GLOBAL_FIXTURE(small_listen_room);
CORIO_TEST_TRANSPORT_FIXTURE();

BOOST_AUTO_TEST_CASE(only_a_listen_primes_the_listen_service) {
    // A count of 0 proves nothing if libcorio's calls go past this
    // definition (an executable that does not export it: test/meson.build).
    BOOST_TEST_REQUIRE(::dlsym(RTLD_DEFAULT, "rlisten") == reinterpret_cast<void*>(&rlisten),
                       "the process resolves rlisten to this test's definition");
    asio::io_context io;
    const auto where = corio::test::any_port_endpoint();

    // A client's socket: the connection service is primed in the background.
    corio::stream client(io.get_executor());
    client.open(corio::transport::rsocket, where.protocol());
    BOOST_TEST_REQUIRE(corio::test::wait_for_background_jobs(120s),
                       "the connection service's priming ended");
    BOOST_TEST(rlisten_calls.load() == 0, "rlisten calls after a client's priming");

    // The first listen primes the listen service (two starts for a room of
    // 8), then listens itself.
    corio::acceptor listener(io.get_executor(), where, corio::transport::rsocket);
    BOOST_TEST(rlisten_calls.load() >= 3, "rlisten calls after the first listen");

    // And the listener works: the client connects to it. The results start
    // as an error, so that a handler that never ran fails the case.
    boost::system::error_code accept_ec = asio::error::timed_out;
    boost::system::error_code connect_ec = asio::error::timed_out;
    std::optional<corio::stream> server;
    listener.async_accept([&](boost::system::error_code ec, corio::stream peer) {
        accept_ec = ec;
        server.emplace(std::move(peer));
    });
    client.async_connect(listener.local_endpoint(),
                         [&](boost::system::error_code ec) { connect_ec = ec; });
    io.run_for(60s);
    BOOST_TEST(!connect_ec, connect_ec.message());
    BOOST_TEST(!accept_ec, accept_ec.message());
    BOOST_TEST((server && server->is_open()));
}
