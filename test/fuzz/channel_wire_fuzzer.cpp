// libFuzzer target for the zero-copy channel's wire (lib/corio/detail/
// channel_wire.hpp, doc/zero-copy-channel.md): the hello both roles read,
// and the notify records a receiver checks before it hands a slot to the
// application.
//
// Input: 4 control bytes, a 32-byte hello, then steps. The hello is decoded
// as each role would; one that passes must re-encode to the same bytes and,
// as a receiver's, describe a region that is not empty, within max_region
// and whose offset leaves room for it. The control bytes shape a receiver
// (slot count and size, its region allocated at its exact size so that
// AddressSanitizer sees any byte past it); each step is one byte: odd gives
// a slot back (as the application releasing a message does), even is
// followed by a 24-byte notify, which goes through the receiver's own checks.
// Checked: an admitted notify names a slot the sender held, its bytes lie
// inside the region (written, so ASan would catch one outside), sequences
// admitted are 0, 1, 2, ..., and every admitted notify round-trips.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <corio/detail/channel_wire.hpp>

namespace wire = corio::detail::channel_wire;

namespace {

void require(bool condition) {
    if (!condition)
        std::abort();
}

void check_hello(const wire::hello_bytes& bytes) {
    for (const auto role : {wire::role::sender, wire::role::receiver}) {
        wire::hello h;
        if (wire::decode(bytes, role, h))
            continue;
        require(h.sender_or_receiver == role);
        require(wire::encode(h) == bytes);
        if (role == wire::role::receiver) {
            const std::uint64_t region = std::uint64_t{h.slot_count} * h.slot_size;
            require(region != 0 && region <= wire::max_region);
            require(h.region_offset + region >= h.region_offset); // no wrap
        } else {
            require(h.slot_count == 0 && h.slot_size == 0 && h.region_offset == 0);
        }
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    constexpr std::size_t control = 4;
    if (size < control + wire::hello_size)
        return 0;
    const std::uint32_t slot_count = 1 + data[0] % 16;
    const std::uint32_t slot_size = 1 + ((std::uint32_t{data[1]} << 8) | data[2]) % 4096;
    data += control;
    size -= control;

    wire::hello_bytes hello;
    std::memcpy(hello.data(), data, hello.size());
    check_hello(hello);
    data += hello.size();
    size -= hello.size();

    std::vector<std::byte> region(std::size_t{slot_count} * slot_size);
    std::vector<bool> with_application(slot_count, false);
    std::uint64_t expected = 0;
    std::uint32_t next_release = 0;
    while (size > 0) {
        const std::uint8_t step = *data++;
        --size;
        if (step & 1) {
            // The application gives back the oldest slot it holds, if any.
            for (std::uint32_t i = 0; i < slot_count; ++i) {
                const std::uint32_t slot = (next_release + i) % slot_count;
                if (with_application[slot]) {
                    with_application[slot] = false;
                    next_release = slot + 1;
                    break;
                }
            }
            continue;
        }
        if (size < wire::notify_size)
            break;
        wire::notify_bytes record;
        std::memcpy(record.data(), data, record.size());
        data += record.size();
        size -= record.size();

        wire::notify n;
        if (wire::decode_notify(record, n))
            continue;
        require(wire::encode_notify(n.slot, n.length, n.sequence) == record);
        const bool admitted = wire::admissible(n, slot_count, slot_size, expected,
                                               [&](std::uint32_t slot) {
                                                   require(slot < slot_count);
                                                   return !with_application[slot];
                                               });
        if (!admitted)
            continue; // the receiver fails the channel; the model just goes on
        require(n.slot < slot_count && !with_application[n.slot]);
        require(n.length <= slot_size && n.sequence == expected);
        std::byte* at = region.data() + std::size_t{n.slot} * slot_size;
        require(at + n.length <= region.data() + region.size());
        std::memset(at, 0x5a, n.length);
        with_application[n.slot] = true;
        ++expected;
    }
    return 0;
}
