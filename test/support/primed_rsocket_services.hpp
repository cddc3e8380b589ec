#pragma once

#include "transport_under_test.hpp"

namespace corio::test {

/// A global fixture: on the rsocket transport, connects one stream pair and
/// closes it before the first case runs, under no case's deadline.
///
/// A process's first connect waits for corio to prime librdmacm's service
/// threads (lib/corio/detail/rsocket_ops.cpp): a thread start per 4 places
/// of room, about 20 ms each under the guest's emulation on a quiet host and
/// several times that on a loaded one, where a busy-polling io_context
/// competes with them for the guest's two CPUs. Counted in a case's 10 s
/// deadline, that made the first case that connects fail in CI. Prints how
/// long the first connection took; throws when it fails or is not done within 120 s.
struct primed_rsocket_services {
    primed_rsocket_services();
};

} // namespace corio::test

/// CORIO_TEST_TRANSPORT_FIXTURE, then primed_rsocket_services: for tests
/// whose cases connect but do not check the process's first connect.
#define CORIO_TEST_PRIMED_TRANSPORT_FIXTURE()                                                      \
    CORIO_TEST_TRANSPORT_FIXTURE();                                                                \
    using corio_primed_rsocket_services = ::corio::test::primed_rsocket_services;                  \
    BOOST_TEST_GLOBAL_FIXTURE(corio_primed_rsocket_services)
