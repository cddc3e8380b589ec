#define BOOST_TEST_MODULE open_rsocket_table
#include <boost/test/unit_test.hpp>

#include <memory>
#include <thread>
#include <vector>

#include <corio/detail/open_rsocket_table.hpp>

// The seam's record of its open rsocket numbers: a number it never gave out
// must never be taken for an rsocket, or a v44 data call would crash on it.

using corio::detail::open_rsocket_table;

BOOST_AUTO_TEST_CASE(a_number_is_open_from_add_to_remove) {
    auto table = std::make_unique<open_rsocket_table>();
    BOOST_TEST(!table->contains(7));
    BOOST_TEST(table->add(7));
    BOOST_TEST(table->contains(7));
    table->remove(7);
    BOOST_TEST(!table->contains(7));
    // Removing what is not open changes nothing, also for its neighbours.
    BOOST_TEST(table->add(8));
    table->remove(7);
    BOOST_TEST(table->contains(8));
}

BOOST_AUTO_TEST_CASE(neighbours_in_one_word_and_across_words_stay_apart) {
    auto table = std::make_unique<open_rsocket_table>();
    for (int s : {0, 1, 62, 63, 64, 65, 127, 128})
        BOOST_TEST(table->add(s));
    table->remove(63);
    table->remove(64);
    for (int s : {0, 1, 62, 65, 127, 128})
        BOOST_TEST(table->contains(s), s);
    for (int s : {2, 61, 63, 64, 66, 126, 129})
        BOOST_TEST(!table->contains(s), s);
}

BOOST_AUTO_TEST_CASE(numbers_outside_the_table_are_never_open) {
    auto table = std::make_unique<open_rsocket_table>();
    constexpr int last = open_rsocket_table::capacity - 1;
    BOOST_TEST(table->add(last));
    BOOST_TEST(table->contains(last));
    BOOST_TEST(!table->add(-1));
    BOOST_TEST(!table->add(open_rsocket_table::capacity));
    BOOST_TEST(!table->add(1 << 20));
    for (int s : {-1, -64, -65536, open_rsocket_table::capacity, 1 << 20})
        BOOST_TEST(!table->contains(s), s);
    table->remove(-1);
    table->remove(open_rsocket_table::capacity);
    BOOST_TEST(table->contains(last));
}

BOOST_AUTO_TEST_CASE(threads_changing_bits_of_one_word_lose_none) {
    // Each thread owns a bit of every word and flips it many times: a
    // read-modify-write that is not atomic would lose other threads' bits.
    auto table = std::make_unique<open_rsocket_table>();
    constexpr int threads = 4;
    constexpr int words = 8;
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&table, t] {
            for (int round = 0; round < 20000; ++round) {
                for (int w = 0; w < words; ++w) {
                    const int s = w * 64 + t;
                    table->add(s);
                    if (round % 2 == 0)
                        table->remove(s);
                }
            }
        });
    }
    for (auto& w : workers)
        w.join();
    // The last round (odd) leaves every thread's bits set.
    for (int w = 0; w < words; ++w)
        for (int t = 0; t < threads; ++t)
            BOOST_TEST(table->contains(w * 64 + t), w * 64 + t);
    BOOST_TEST(!table->contains(threads));
}
