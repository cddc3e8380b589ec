#pragma once

#include <cstdint>
#include <optional>

namespace coriostream {

/// Tells whether the peer's riowrites still land in this end's mapping while
/// this end waits for the last of a row's transfers. A bandwidth row's
/// receiver hears nothing else from its peer until that one: the transfers
/// before it land without a call of this end's (on rsockets the NIC writes
/// them), so --timeout would give up on a peer that is busy writing.
///
/// Every transfer writes the whole region, the marker byte (its last) too,
/// and only the last transfer writes the awaited marker. So a probe puts a
/// canary, a value that is not the marker, into that byte; if the byte holds
/// something else at the next probe, a transfer landed in between. The
/// canary goes in with a compare-exchange from the value just read: a
/// transfer that lands between the read and the exchange makes the exchange
/// fail, and one that lands after it overwrites the canary, so the marker is
/// never overwritten. Two canaries take turns, so that transfers carrying
/// one of them (their value is whatever the peer's buffer held) are noticed
/// at every other probe.
///
/// The byte is only ever touched with atomic operations here; the peer's
/// NIC (or Soft-RoCE's kernel, or corio's tcp emulation) writes it too.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: unsafe.
class landing_probe {
public:
    /// Watches `marker_byte`, the last byte of the region the peer writes
    /// into, for the row's transfers that come before the one carrying
    /// `marker`.
    landing_probe(std::uint8_t& marker_byte, std::uint8_t marker) noexcept
        : marker_byte_(marker_byte), marker_(marker) {}

    /// True when a transfer landed since the previous call: the marker
    /// arrived (said once), or a canary this object put in has been
    /// overwritten. The first call can only plant a canary, and says false
    /// unless the marker is there.
    bool transfer_landed() noexcept;

private:
    std::uint8_t& marker_byte_;
    std::uint8_t marker_;
    std::optional<std::uint8_t> planted_;
    bool second_canary_ = false;
    bool marker_seen_ = false;
};

} // namespace coriostream
