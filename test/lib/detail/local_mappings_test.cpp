#define BOOST_TEST_MODULE local_mappings
#include <boost/test/unit_test.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>

#include <sys/mman.h>

#include <boost/asio/error.hpp>

#include <corio/detail/local_mappings.hpp>

using corio::detail::local_mappings;
using fit = local_mappings::fit;

BOOST_AUTO_TEST_CASE(a_mapping_is_found_by_offset_and_points_into_its_region) {
    std::array<std::byte, 100> region{};
    local_mappings m(1);
    off_t mapped = 0;
    BOOST_TEST_REQUIRE(!m.add(region.data(), region.size(), PROT_WRITE, 1000, mapped));
    BOOST_TEST(mapped == 1000);
    std::byte* at = nullptr;
    BOOST_TEST((m.find(1000, 100, at) == fit::inside));
    BOOST_TEST(at == region.data());
    BOOST_TEST((m.find(1050, 50, at) == fit::inside));
    BOOST_TEST(at == region.data() + 50);
    BOOST_TEST((m.find(1099, 2, at) == fit::crosses_end));
    BOOST_TEST((m.find(1050, std::numeric_limits<std::uint64_t>::max(), at) == fit::crosses_end));
    BOOST_TEST((m.find(999, 1, at) == fit::unknown));
    BOOST_TEST((m.find(1100, 1, at) == fit::unknown));
}

BOOST_AUTO_TEST_CASE(offset_minus_one_chooses_the_region_address_as_rsockets_do) {
    std::array<std::byte, 64> region{};
    local_mappings m(1);
    off_t mapped = 0;
    BOOST_TEST_REQUIRE(!m.add(region.data(), region.size(), PROT_WRITE, -1, mapped));
    BOOST_TEST(static_cast<std::uintptr_t>(mapped) == reinterpret_cast<std::uintptr_t>(region.data()));
}

BOOST_AUTO_TEST_CASE(the_limit_counts_writable_mappings_only) {
    std::array<std::byte, 64> a{}, b{}, c{};
    local_mappings m(1);
    off_t mapped = 0;
    BOOST_TEST(!m.add(a.data(), a.size(), PROT_WRITE, 0, mapped));
    BOOST_TEST((m.add(b.data(), b.size(), PROT_WRITE, 100, mapped) == boost::asio::error::no_memory));
    BOOST_TEST(!m.add(c.data(), c.size(), PROT_NONE, 200, mapped));
    std::byte* at = nullptr;
    BOOST_TEST((m.find(200, 1, at) == fit::not_writable));
    BOOST_TEST(!m.remove(a.data(), a.size()));
    BOOST_TEST(!m.add(b.data(), b.size(), PROT_WRITE, 100, mapped));
}

BOOST_AUTO_TEST_CASE(bad_requests_are_refused) {
    std::array<std::byte, 64> a{}, b{};
    local_mappings m(4);
    off_t mapped = 0;
    const boost::system::error_code invalid = boost::asio::error::invalid_argument;
    BOOST_TEST((m.add(a.data(), a.size(), PROT_READ, 0, mapped) == invalid));
    BOOST_TEST((m.add(a.data(), 0, PROT_WRITE, 0, mapped) == invalid));
    BOOST_TEST((m.add(nullptr, 8, PROT_WRITE, 0, mapped) == invalid));
    BOOST_TEST((m.add(a.data(), a.size(), PROT_WRITE, -2, mapped) == invalid));
    BOOST_TEST((m.add(a.data(), a.size(), PROT_WRITE, std::numeric_limits<off_t>::max() - 8,
                      mapped) == invalid));
    BOOST_TEST(!m.add(a.data(), a.size(), PROT_WRITE, 0, mapped));
    // Overlapping offsets would make a frame's destination ambiguous.
    BOOST_TEST((m.add(b.data(), b.size(), PROT_WRITE, 63, mapped) == invalid));
    BOOST_TEST(!m.add(b.data(), b.size(), PROT_WRITE, 64, mapped));
    BOOST_TEST((m.remove(a.data(), a.size() - 1) == invalid));
    BOOST_TEST(m.size() == 2u);
}
