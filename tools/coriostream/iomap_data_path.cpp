#include "iomap_data_path.hpp"

#include <algorithm>
#include <atomic>
#include <string_view>
#include <utility>

#include <sys/mman.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/socket_base.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <corio/error.hpp>
#include <corio/iomap_registration.hpp>
#include <corio/memlock_limit.hpp>

#include "landing_probe.hpp"
#include "run_error.hpp"
#include "test_announcement.hpp"

namespace coriostream {

namespace {

// riostream sets the marker byte to -1 before every test, a value no
// marker of the test's first 128 iterations can have.
constexpr std::uint8_t no_marker = 0xff;

// How many times the marker byte is looked at before the wait yields to the
// executor, in every poll mode. Nothing signals the byte's arrival (the
// peer's NIC writes it), so looking is the only way.
//
// Beside other streams, or the peers' own halves (--streams, --loopback): a
// few microseconds, short enough for the other connections on the same
// thread to get their turn, long enough that a wait does not cost a post
// per look. A marker the peer's riowrite already sent can land during them:
// the NIC (in Soft-RoCE, the kernel) writes it, not the peer's thread.
constexpr int looks_per_yield_shared = 1024;
// A stream alone on its io_context yields only for the watchdog and the
// progress meter, whose timers count in seconds. A yield inside a wait
// detects a marker that arrives during it late, which makes this end's
// answer late, which makes the peer's next wait longer: in the Soft-RoCE
// guest two coriostreams yielding every 1,024 looks took 15.2 usec/xfer at
// 64_lat against 12.2 with 65,536 (riostream 11.1), doc/performance.md,
// session 24, where 1,024 looks took 2.1 us in the guest and 65,536 took
// 128 us there and 18 us on the host's CPU.
constexpr int looks_per_yield_alone = 1 << 16;

// How many looks at the marker byte a wait makes between two questions to
// the connection, whatever its burst: riostream never asks, so a peer that
// dies while this end waits for its marker leaves riostream spinning
// forever, and coriostream only had --timeout (30 s by default). rsockets
// learn of a peer's end from its disconnect message or, for a peer killed
// outright, from the kernel's disconnect request (v44's connect service
// thread marks the socket disconnected); either way a peek reports it. Once
// per burst alone (128 us in the guest, 18 us on the host's CPU), once per
// 64 bursts beside other streams: a wait of a latency row rarely lasts one,
// so the fast path never asks.
constexpr int looks_per_peer_check = looks_per_yield_alone;

std::uint8_t load_marker(std::uint8_t& byte) noexcept {
    // The NIC writes this byte behind the compiler's back; the acquire load
    // also orders the verification's reads of the rest of the buffer after
    // it, as riostream's volatile read does on x86.
    return std::atomic_ref<std::uint8_t>(byte).load(std::memory_order_acquire);
}

void store_marker(std::uint8_t& byte, std::uint8_t value) noexcept {
    std::atomic_ref<std::uint8_t>(byte).store(value, std::memory_order_relaxed);
}

/// While it lives, the watchdog counts transfers landing in a receiver's
/// mapping as progress: a bandwidth row's transfers land without a word to
/// this end, and a row longer than --timeout must not time out.
class watched_landings {
public:
    watched_landings(peer_watchdog& watchdog, std::uint8_t& marker_byte, std::uint8_t marker)
        : landings_(marker_byte, marker),
          scope_(watchdog, [this] { return landings_.transfer_landed(); }) {}
    // The scope's probe holds `this`.
    watched_landings(const watched_landings&) = delete;
    watched_landings& operator=(const watched_landings&) = delete;

private:
    landing_probe landings_;
    // Declared last, so destroyed first: the watchdog must stop asking
    // landings_ before it goes.
    peer_watchdog::probe_scope scope_;
};

} // namespace

iomap_data_path::iomap_data_path(const transfer_context& context)
    : context_(context), send_call_(call_name(context.transport, "send")),
      recv_call_(call_name(context.transport, "recv")),
      attempts_(attempts_before_wait(context.polling, context.sharing)),
      looks_per_yield_(context.sharing == thread_sharing::stream_alone ? looks_per_yield_alone
                                                                       : looks_per_yield_shared),
      yields_per_peer_check_(std::max(1, looks_per_peer_check / looks_per_yield_)),
      pacing_(context.sharing) {}

// Inline into run_test, with call_once, as stream_data_path::try_xfer is.
[[gnu::always_inline]] inline std::optional<boost::asio::awaitable<void>>
iomap_data_path::try_call(io_call what, std::span<std::uint8_t> data) {
    // riostream's send_xfer loops riowrite over the buffer, writing each
    // piece at its own offset of the peer's mapping at 0; so does try_all.
    std::size_t done = 0;
    boost::system::error_code ec;
    if (!try_all(context_.stream, what, data, 0, done, ec, attempts_))
        return call_rest(what, data, done);
    end_call(what, ec);
    return std::nullopt;
}

boost::asio::awaitable<void> iomap_data_path::call_rest(io_call what,
                                                        std::span<std::uint8_t> data,
                                                        std::size_t done) {
    end_call(what, co_await rest_of_all(context_.stream, what, data, 0, done));
}

void iomap_data_path::end_call(io_call what, const boost::system::error_code& ec) {
    if (ec) {
        throw_transfer_error(context_, ec,
                             what == io_call::write  ? std::string_view(send_call_)
                             : what == io_call::read ? std::string_view(recv_call_)
                                                     : std::string_view("riowrite"));
    }
    context_.watchdog.note_progress();
    if (what == io_call::iowrite)
        context_.progress.add(1);
}

void iomap_data_path::mark_last_write(std::span<std::uint8_t> region, std::uint8_t marker) {
    store_marker(region.back(), marker);
    if (context_.verify)
        context_.pattern.format(region.first(region.size() - 1));
}

bool iomap_data_path::marker_arrived(std::uint8_t& marker_byte, std::uint8_t marker) const {
    for (int i = 0; i < looks_per_yield_; ++i) {
        if (load_marker(marker_byte) == marker)
            return true;
    }
    return false;
}

boost::asio::awaitable<void> iomap_data_path::wait_for_marker(std::uint8_t& marker_byte,
                                                              std::uint8_t marker) {
    const auto executor = co_await boost::asio::this_coro::executor;
    const watched_landings watched(context_.watchdog, marker_byte, marker);
    int yields_to_check = yields_per_peer_check_;
    do {
        // riostream spins forever; the watchdog ends a wait for a peer that
        // stopped answering, and the peek one for a peer that has gone.
        if (context_.watchdog.expired())
            throw_transfer_error(context_, boost::asio::error::timed_out, "riowrite");
        if (--yields_to_check == 0) {
            yields_to_check = yields_per_peer_check_;
            if (const auto ec = peer_gone()) {
                // A peer's end travels behind its last write, which lands
                // here first: the marker may have come since the last look.
                if (marker_arrived(marker_byte, marker))
                    co_return;
                throw_transfer_error(context_, ec, recv_call_);
            }
        }
        co_await boost::asio::post(executor, boost::asio::use_awaitable);
    } while (!marker_arrived(marker_byte, marker));
}

boost::system::error_code iomap_data_path::peer_gone() {
    // Nothing travels through the stream while a marker is awaited (the
    // handshake is over, and the peer's next bytes come after this end's
    // answer), so bytes there are left for the read that expects them; only
    // the end of the stream or an error means anything. The stream is in
    // non_blocking mode for the whole run (session::run): the peek never
    // waits.
    std::uint8_t byte = 0;
    boost::system::error_code ec;
    context_.stream.receive(boost::asio::buffer(&byte, 1), boost::asio::socket_base::message_peek,
                            ec);
    if (ec == boost::asio::error::would_block)
        return {};
    return ec;
}

void iomap_data_path::end_recv(std::span<std::uint8_t> region, std::size_t transfer_count) {
    context_.watchdog.note_progress();
    context_.progress.add(transfer_count);
    if (context_.verify) {
        if (const auto failed_at = context_.pattern.verify(region.first(region.size() - 1)))
            throw run_error("data verification failed byte " + std::to_string(*failed_at));
    }
}

boost::asio::awaitable<transfer_timing> iomap_data_path::run_test(const test_case& test) {
    const auto region = context_.buffer.first(test.transfer_size);
    store_marker(region.back(), no_marker);
    corio::iomap_registration mapping;
    try {
        mapping = corio::iomap_registration(context_.stream,
                                            boost::asio::buffer(region.data(), region.size()),
                                            PROT_WRITE, 0);
    } catch (const boost::system::system_error& error) {
        if (error.code() == corio::error::memlock_limit_exceeded)
            throw run_error("riomap: " + corio::memlock_diagnostic(corio::pinned_size(
                                             region.data(), region.size())));
        if (error.code() == corio::error::iomap_slots_exhausted)
            throw run_error("riomap: the peer offered no iomap slot for this test's mapping: " +
                            std::string(stream_peer_question));
        throw_transfer_error(context_, error.code(), "riomap");
    }
    // riostream's sync_test: 16 bytes each way, the client first. riostream
    // never looks at them (not even with -T v); here they announce each
    // end's test, and both ends compare once both have been sent: a peer
    // given another test would otherwise write past this end's mapping.
    const auto ours = test_announcement::of(test, data_path_kind::iomap, context_.notify,
                                            context_.is_client ? test_announcement::role::client
                                                               : test_announcement::role::server);
    sync_out_ = ours.encode();
    const auto order = context_.is_client ? std::array{io_call::write, io_call::read}
                                          : std::array{io_call::read, io_call::write};
    for (const auto what : order) {
        if (auto rest = try_call(what, what == io_call::write ? std::span<std::uint8_t>(sync_out_)
                                                              : std::span<std::uint8_t>(sync_in_)))
            co_await std::move(*rest);
    }
    if (auto mismatch = announcement_mismatch(sync_in_, ours))
        throw run_error(*mismatch);
    // The handshake carried both mappings: the peer's covers the same bytes
    // at the same offset, since both ends run the same test (compared above
    // against a coriostream; riostream's handshake does not say). The previous
    // test's mapping is gone (the peer unmapped it).
    context_.stream.clear_remote_mappings();
    context_.stream.add_remote_mapping(0, region.size());

    if (context_.notify == notify_method::marker) {
        // One pass through the marker wait before the timer starts, on a
        // byte that already holds its marker: one yield, one look. Under
        // emulation code costs milliseconds the first time it runs (QEMU
        // translates it), and otherwise the first wait of a latency row to
        // yield, at either end, did that inside the timed loop, where
        // riostream's wait has no such code: 1-2 ms of the first yield,
        // and a first round trip of 5.8-9.1 ms against riostream's 1.7 in
        // most 4k_lat rows (doc/performance.md, session 26). On any
        // machine it costs one post.
        std::uint8_t warm_marker = 0;
        co_await wait_for_marker(warm_marker, 0);
    }
    transfer_timing timing{};
    timing.start = std::chrono::steady_clock::now();
    // Each iteration: the client's transfers and then the server's, each
    // side's marking the next marker. The calls and the first looks at the
    // marker need no coroutine of their own unless they wait.
    std::uint8_t marker = 0;
    const auto executor = co_await boost::asio::this_coro::executor;
    const bool paced = pacing_.active() && test.transfer_count > 1;
    for (std::size_t i = 0; i < test.iterations; ++i) {
        for (const auto what : order) {
            if (what == io_call::write) {
                // riostream's send_xfer: transfer_count riowrites, the last
                // one carrying the marker.
                for (std::size_t t = 1; t < test.transfer_count; ++t) {
                    if (auto rest = try_call(io_call::iowrite, region)) {
                        co_await std::move(*rest);
                        pacing_.peer_had_turn();
                    } else if (paced && pacing_.turn_due(region.size())) {
                        co_await boost::asio::post(executor, boost::asio::use_awaitable);
                    }
                }
                mark_last_write(region, marker);
                if (auto rest = try_call(io_call::iowrite, region))
                    co_await std::move(*rest);
                if (context_.notify == notify_method::message) {
                    // Sent after the write completed: rsockets deliver it
                    // behind the written data, so the peer reads it only once
                    // the bytes are there.
                    std::array<std::uint8_t, 1> notice{marker};
                    if (auto rest = try_call(io_call::write, notice))
                        co_await std::move(*rest);
                }
            } else if (context_.notify == notify_method::message) {
                std::array<std::uint8_t, 1> notice{};
                if (auto rest = try_call(io_call::read, notice)) {
                    // The transfers before the notice are progress too.
                    const watched_landings watched(context_.watchdog, region.back(), marker);
                    co_await std::move(*rest);
                }
                if (notice[0] != marker)
                    throw run_error("protocol error: expected notice " + std::to_string(marker) +
                                    ", got " + std::to_string(notice[0]));
                end_recv(region, test.transfer_count);
            } else {
                if (!marker_arrived(region.back(), marker))
                    co_await wait_for_marker(region.back(), marker);
                end_recv(region, test.transfer_count);
            }
            ++marker;
        }
    }
    timing.end = std::chrono::steady_clock::now();
    if (const auto ec = mapping.reset())
        throw_transfer_error(context_, ec, "riounmap");
    co_return timing;
}

} // namespace coriostream
