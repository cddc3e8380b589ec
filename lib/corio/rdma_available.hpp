#pragma once

namespace corio {

/// True when this host can create an rsocket, that is when librdmacm finds
/// an RDMA device. The answer is taken once per process: creating an rsocket costs a
/// device scan, and devices appearing later are not observed.
bool rdma_available() noexcept;

} // namespace corio
