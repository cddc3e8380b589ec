#include "requires_rdma.hpp"

#include <cstdio>
#include <cstdlib>

#include <corio/rdma_available.hpp>

namespace corio::test {

requires_rdma_device::requires_rdma_device() {
    if (corio::rdma_available())
        return;
    std::puts("SKIP: no RDMA device on this host (creating an rsocket fails with ENODEV); "
              "run this test through test/softroce/guest-run");
    std::fflush(stdout);
    // _Exit: Boost.Test's framework is mid-setup, and running its static
    // destructors from here would report a spurious failure.
    std::_Exit(77);
}

} // namespace corio::test
