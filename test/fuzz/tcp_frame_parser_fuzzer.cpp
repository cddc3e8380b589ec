// libFuzzer target for the TCP emulation's receive parser
// (lib/corio/detail/tcp_frame_parser.hpp, doc/tcp-transport.md).
//
// Input: 8 control bytes, then the bytes of the wire. The wire goes through
// three parsers over the same mappings: all at once; in pieces and with a
// stream buffer whose sizes the control bytes choose; and in pieces again
// with the first mapping withdrawn (and poisoned) at a point they choose.
// Checked: no byte lands outside a writable mapping (guard bytes, and
// AddressSanitizer on exact-size regions), the split never changes what is
// delivered, placed or refused, and a failed parser takes no more input.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include <sanitizer/asan_interface.h>
#include <sys/mman.h>

#include <corio/detail/local_mappings.hpp>
#include <corio/detail/tcp_frame_parser.hpp>

using corio::detail::local_mappings;
using corio::detail::tcp_frame_parser;

namespace {

void require(bool condition) {
    if (!condition)
        std::abort();
}

constexpr std::byte guard_byte{0xa5};
constexpr std::size_t guard = 32;

/// A region with guard bytes around it, allocated at its exact size so that
/// ASan's redzones sit right behind the guards.
struct region {
    explicit region(std::size_t n) : memory(guard + n + guard, guard_byte), size(n) {}
    std::byte* data() { return memory.data() + guard; }
    bool guards_intact() const {
        const auto is_guard = [](std::byte b) { return b == guard_byte; };
        return std::all_of(memory.begin(), memory.begin() + guard, is_guard) &&
               std::all_of(memory.end() - guard, memory.end(), is_guard);
    }
    std::vector<std::byte> memory;
    std::size_t size;
};

/// Two writable mappings (256 bytes at 4096, 4096 bytes at 65536) and a
/// PROT_NONE one (64 bytes at 8192), as a receiver would register them.
struct receiver {
    receiver() {
        off_t at = 0;
        require(!mappings.add(small.data(), small.size, PROT_WRITE, 4096, at));
        require(!mappings.add(large.data(), large.size, PROT_WRITE, 65536, at));
        require(!mappings.add(none.data(), none.size, PROT_NONE, 8192, at));
    }

    bool untouched_outside() const {
        const auto is_guard = [](std::byte b) { return b == guard_byte; };
        return small.guards_intact() && large.guards_intact() && none.guards_intact() &&
               std::all_of(none.memory.begin(), none.memory.end(), is_guard);
    }

    region small{256};
    region large{4096};
    region none{64};
    local_mappings mappings{2};
    tcp_frame_parser parser{mappings};
    std::vector<std::byte> stream;
};

/// Feeds `wire` in pieces of 1 to 64 bytes and with stream buffers of 1 to
/// 64 bytes, both chosen by `control`; calls `at_piece(i)` before piece i.
template <class AtPiece>
void feed_split(receiver& r, std::span<const std::byte> wire, std::span<const std::uint8_t> control,
                AtPiece at_piece) {
    std::size_t done = 0;
    for (std::size_t i = 0; done < wire.size(); ++i) {
        at_piece(i);
        const std::size_t piece =
            std::min<std::size_t>(1 + control[i % 4] % 64 + (i & 1), wire.size() - done);
        std::size_t used = 0;
        while (used < piece) {
            std::vector<std::byte> out(1 + control[4 + i % 3] % 64);
            const auto result = r.parser.feed(wire.subspan(done + used, piece - used), out);
            require(result.delivered <= out.size() && result.consumed <= piece - used);
            r.stream.insert(r.stream.end(), out.begin(),
                            out.begin() + static_cast<std::ptrdiff_t>(result.delivered));
            used += result.consumed;
            if (result.ec) {
                require(r.parser.next() == tcp_frame_parser::stage::failed);
                // Failed stays failed, and takes nothing more.
                std::vector<std::byte> more(16);
                const auto again = r.parser.feed(wire.subspan(done + used), more);
                require(again.consumed == 0 && again.delivered == 0 && again.ec == result.ec);
                return;
            }
            if (result.consumed == 0)
                require(result.delivered == 0 && r.parser.next() ==
                                                      tcp_frame_parser::stage::stream_payload);
        }
        done += piece;
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 8)
        return 0;
    const std::span<const std::uint8_t> control(data, 8);
    const std::span<const std::byte> wire(reinterpret_cast<const std::byte*>(data) + 8, size - 8);

    // All at once, with room for every stream byte.
    receiver whole;
    whole.stream.resize(wire.size());
    const auto result = whole.parser.feed(wire, whole.stream);
    require(result.consumed <= wire.size() && result.delivered <= wire.size());
    require(result.ec || result.consumed == wire.size());
    whole.stream.resize(result.delivered);
    require(whole.untouched_outside());

    // Split: the same stream bytes, the same placed bytes, the same verdict.
    receiver split;
    feed_split(split, wire, control, [](std::size_t) {});
    require(split.untouched_outside());
    require(split.stream == whole.stream);
    require(split.small.memory == whole.small.memory);
    require(split.large.memory == whole.large.memory);
    require(split.parser.error() == whole.parser.error());
    require(split.parser.why() == whole.parser.why());
    require(split.parser.next() == whole.parser.next());
    require(split.parser.end_of_stream() == whole.parser.end_of_stream());

    // Split, with the small mapping withdrawn part-way: from then on nothing
    // may touch it (ASan reports any write to the poisoned bytes).
    receiver withdrawn;
    const std::size_t when = control[7] % 16;
    bool poisoned = false;
    feed_split(withdrawn, wire, control, [&](std::size_t piece) {
        if (piece != when || poisoned)
            return;
        require(!withdrawn.mappings.remove(withdrawn.small.data(), withdrawn.small.size));
        withdrawn.parser.mapping_removed(withdrawn.small.data(), withdrawn.small.size);
        ASAN_POISON_MEMORY_REGION(withdrawn.small.data(), withdrawn.small.size);
        poisoned = true;
    });
    if (poisoned)
        ASAN_UNPOISON_MEMORY_REGION(withdrawn.small.data(), withdrawn.small.size);
    require(withdrawn.untouched_outside());
    return 0;
}
