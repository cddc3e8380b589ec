#pragma once

#include <boost/test/unit_test.hpp>

namespace corio::test {

/// A global fixture for test modules that need an RDMA device: without one,
/// it prints a one-line reason and exits 77, which meson reports as SKIP.
struct requires_rdma_device {
    requires_rdma_device();
};

} // namespace corio::test

// BOOST_TEST_GLOBAL_FIXTURE pastes its argument into a name, so it needs an
// unqualified one.
#define CORIO_TEST_REQUIRES_RDMA()                                                                 \
    using corio_requires_rdma_device = ::corio::test::requires_rdma_device;                        \
    BOOST_TEST_GLOBAL_FIXTURE(corio_requires_rdma_device)
