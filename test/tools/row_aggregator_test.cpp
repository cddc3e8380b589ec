#define BOOST_TEST_MODULE row_aggregator
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <vector>

#include <coriostream/report.hpp>
#include <coriostream/row_aggregator.hpp>
#include <coriostream/test_plan.hpp>

using namespace std::chrono_literals;
using coriostream::row_aggregator;
using coriostream::test_result;
using coriostream::transfer_timing;

namespace {

const auto origin = std::chrono::steady_clock::time_point{} + 1h;

transfer_timing between(std::chrono::microseconds start, std::chrono::microseconds end) {
    return {origin + start, origin + end};
}

} // namespace

BOOST_AUTO_TEST_CASE(one_stream_gives_riostreams_row) {
    std::vector<test_result> rows;
    row_aggregator rows_of_one(1, [&](const test_result& row) { rows.push_back(row); });
    const auto test = coriostream::latency_test(64);
    rows_of_one.record(0, test, between(10us, 3'920'010us));
    BOOST_TEST_REQUIRE(rows.size() == 1U);
    BOOST_TEST(rows[0].test.name == "64_lat");
    BOOST_TEST(rows[0].test.transfer_count == 1U);
    BOOST_TEST(rows[0].test.iterations == 100000U);
    BOOST_TEST(rows[0].elapsed.count() == 3'920'000);
}

BOOST_AUTO_TEST_CASE(streams_add_their_transfers_over_the_wall_time) {
    std::vector<test_result> rows;
    row_aggregator rows_of_four(4, [&](const test_result& row) { rows.push_back(row); });
    const auto test = coriostream::bandwidth_test(4096);
    rows_of_four.record(0, test, between(20us, 900us));
    rows_of_four.record(0, test, between(10us, 1000us));
    rows_of_four.record(0, test, between(30us, 950us));
    BOOST_TEST(rows.empty());
    rows_of_four.record(0, test, between(15us, 980us));
    BOOST_TEST_REQUIRE(rows.size() == 1U);
    BOOST_TEST(rows[0].test.transfer_count == 40000U);
    BOOST_TEST(rows[0].test.iterations == 1U);
    BOOST_TEST(rows[0].elapsed.count() == 990);
    BOOST_TEST(coriostream::total_bytes(rows[0].test) == 4U * 10000U * 4096U * 2U);
}

BOOST_AUTO_TEST_CASE(rows_complete_one_by_one) {
    std::vector<test_result> rows;
    row_aggregator rows_of_two(2, [&](const test_result& row) { rows.push_back(row); });
    const auto first = coriostream::latency_test(64);
    const auto second = coriostream::latency_test(4096);
    rows_of_two.record(0, first, between(0us, 5us));
    rows_of_two.record(0, first, between(1us, 6us));
    rows_of_two.record(1, second, between(10us, 20us));
    rows_of_two.record(1, second, between(10us, 21us));
    BOOST_TEST_REQUIRE(rows.size() == 2U);
    BOOST_TEST(rows[0].test.name == "64_lat");
    BOOST_TEST(rows[0].elapsed.count() == 6);
    BOOST_TEST(rows[1].test.name == "4k_lat");
    BOOST_TEST(rows[1].elapsed.count() == 11);
}

BOOST_AUTO_TEST_CASE(elapsed_time_is_truncated_to_microseconds) {
    const auto row = row_aggregator::combine(
        coriostream::latency_test(64), 1,
        {origin, origin + std::chrono::nanoseconds(1999)});
    BOOST_TEST(row.elapsed.count() == 1);
}
