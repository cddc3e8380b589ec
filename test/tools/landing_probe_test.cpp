#define BOOST_TEST_MODULE landing_probe
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cstdint>
#include <thread>

#include <coriostream/landing_probe.hpp>

// The byte stands for the last byte of a receiver's mapping; the test writes
// it as the peer's transfers would.

using coriostream::landing_probe;

namespace {

constexpr std::uint8_t no_marker = 0xff;

void land(std::uint8_t& byte, std::uint8_t value) {
    std::atomic_ref<std::uint8_t>(byte).store(value, std::memory_order_relaxed);
}

std::uint8_t read(std::uint8_t& byte) {
    return std::atomic_ref<std::uint8_t>(byte).load(std::memory_order_relaxed);
}

} // namespace

BOOST_AUTO_TEST_CASE(nothing_landed_is_never_reported) {
    std::uint8_t byte = no_marker;
    landing_probe probe(byte, 3);
    // The probe's own canaries must not read as transfers.
    for (int i = 0; i < 10; ++i)
        BOOST_TEST(!probe.transfer_landed());
    BOOST_TEST(read(byte) != 3U);
}

BOOST_AUTO_TEST_CASE(a_transfer_after_a_probe_is_reported_once) {
    std::uint8_t byte = no_marker;
    landing_probe probe(byte, 3);
    BOOST_TEST(!probe.transfer_landed()); // plants the first canary
    land(byte, 2);                        // a transfer before the last
    BOOST_TEST(probe.transfer_landed());
    BOOST_TEST(!probe.transfer_landed()); // nothing since
}

BOOST_AUTO_TEST_CASE(transfers_carrying_a_canary_are_seen_at_every_other_probe) {
    // The peer's transfers carry whatever its buffer holds in the marker
    // byte, which may be one of the canaries; each probe asks after a
    // transfer has landed, as the peer writes all along.
    for (int canary_bit : {0x80, 0x40}) {
        const std::uint8_t marker = 5;
        const auto carried = static_cast<std::uint8_t>(marker ^ canary_bit);
        std::uint8_t byte = no_marker;
        landing_probe probe(byte, marker);
        probe.transfer_landed();
        int seen = 0;
        for (int i = 0; i < 10; ++i) {
            land(byte, carried);
            seen += probe.transfer_landed() ? 1 : 0;
        }
        BOOST_TEST_CONTEXT("canary bit " << canary_bit) {
            BOOST_TEST(seen >= 4);
        }
    }
}

BOOST_AUTO_TEST_CASE(the_marker_is_reported_once_and_left_alone) {
    // With --notify message the notice follows the marker; a peer that
    // never sends it (riostream) must not count as busy for ever.
    std::uint8_t byte = no_marker;
    landing_probe probe(byte, 0x7f);
    probe.transfer_landed();
    land(byte, 0x7f);
    BOOST_TEST(probe.transfer_landed());
    for (int i = 0; i < 3; ++i)
        BOOST_TEST(!probe.transfer_landed());
    BOOST_TEST(read(byte) == 0x7fU);
}

BOOST_AUTO_TEST_CASE(no_canary_is_the_marker) {
    for (int marker = 0; marker < 256; ++marker) {
        std::uint8_t byte = static_cast<std::uint8_t>(marker + 1);
        landing_probe probe(byte, static_cast<std::uint8_t>(marker));
        for (int i = 0; i < 4; ++i) {
            probe.transfer_landed();
            BOOST_TEST_REQUIRE(read(byte) != marker);
        }
    }
}

BOOST_AUTO_TEST_CASE(a_marker_landing_during_probes_is_never_lost) {
    // The peer's writer on another thread, as the NIC or Soft-RoCE's kernel
    // writes: transfers, then the marker. Probes race with every store; a
    // probe that overwrote the marker would leave the receiver waiting
    // forever, and the byte without it here.
    for (int round = 0; round < 200; ++round) {
        const std::uint8_t marker = static_cast<std::uint8_t>(round);
        std::uint8_t byte = no_marker;
        landing_probe probe(byte, marker);
        std::atomic<bool> done{false};
        std::thread writer([&] {
            for (int t = 0; t < 2000; ++t)
                land(byte, static_cast<std::uint8_t>(marker - 1));
            land(byte, marker);
            done.store(true);
        });
        while (!done.load())
            probe.transfer_landed();
        writer.join();
        probe.transfer_landed();
        BOOST_TEST_REQUIRE(read(byte) == marker);
    }
}
