#pragma once

#include <cstdint>

namespace corio::detail {

/// Where a zero_copy_message returns its slot: the receiver's state, which
/// grants the slot to the sender again. Type-erased so that a message does
/// not depend on the receiver's executor type.
class credit_sink {
public:
    /// The application is done with `slot`. Callable from any thread; the
    /// credit is sent from the receiver's executor.
    virtual void release_slot(std::uint32_t slot) noexcept = 0;

protected:
    ~credit_sink() = default;
};

} // namespace corio::detail
