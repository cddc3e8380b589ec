#define BOOST_TEST_MODULE remote_mapping
#include <boost/test/unit_test.hpp>

#include <limits>

#include <corio/detail/remote_mapping.hpp>

using corio::detail::remote_mapping;

BOOST_AUTO_TEST_CASE(a_write_inside_fits) {
    constexpr remote_mapping m{4096, 1024};
    BOOST_TEST(m.contains(4096, 1024));
    BOOST_TEST(m.contains(4096, 0));
    BOOST_TEST(m.contains(5000, 120));
    BOOST_TEST(m.contains(5120, 0));
}

BOOST_AUTO_TEST_CASE(a_write_crossing_either_end_does_not_fit) {
    constexpr remote_mapping m{4096, 1024};
    BOOST_TEST(!m.contains(4095, 1));
    BOOST_TEST(!m.contains(4096, 1025));
    BOOST_TEST(!m.contains(5119, 2));
    BOOST_TEST(!m.contains(5121, 0));
    BOOST_TEST(!m.contains(0, 100));
}

BOOST_AUTO_TEST_CASE(huge_counts_do_not_wrap_around) {
    constexpr remote_mapping m{0, 4096};
    BOOST_TEST(!m.contains(1, std::numeric_limits<std::size_t>::max()));
    BOOST_TEST(!m.contains(std::numeric_limits<off_t>::max(), 1));
}

BOOST_AUTO_TEST_CASE(an_empty_mapping_takes_only_empty_writes_at_its_offset) {
    constexpr remote_mapping m{64, 0};
    BOOST_TEST(m.contains(64, 0));
    BOOST_TEST(!m.contains(64, 1));
}
