#define BOOST_TEST_MODULE test_plan
#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include <coriostream/options.hpp>
#include <coriostream/test_plan.hpp>

// Names and counts below were printed by rdma-core v44's own
// init_latency_test and init_bandwidth_test over its test_size[] table.

using coriostream::connection_plan;
using coriostream::make_test_plan;
using coriostream::options;
using coriostream::series_kind;
using coriostream::size_to_count;

namespace {

struct expected_row {
    std::size_t size;
    const char* latency_name;
    const char* bandwidth_name;
    std::size_t count;
};

const std::vector<expected_row> riostream_table = {
    {64, "64_lat", "64_bw", 100000},       {128, "128_lat", "128_bw", 100000},
    {192, "192_lat", "192_bw", 100000},    {256, "256_lat", "256_bw", 100000},
    {384, "384_lat", "384_bw", 100000},    {512, "512_lat", "512_bw", 100000},
    {768, "768_lat", "768_bw", 100000},    {1024, "1k_lat", "1k_bw", 10000},
    {1536, "1.5k_lat", "1.5k_bw", 10000},  {2048, "2k_lat", "2k_bw", 10000},
    {3072, "3k_lat", "3k_bw", 10000},      {4096, "4k_lat", "4k_bw", 10000},
    {6144, "6k_lat", "6k_bw", 10000},      {8192, "8k_lat", "8k_bw", 10000},
    {12288, "12k_lat", "12k_bw", 10000},   {16384, "16k_lat", "16k_bw", 10000},
    {24576, "24k_lat", "24k_bw", 10000},   {32768, "32k_lat", "32k_bw", 10000},
    {49152, "48k_lat", "48k_bw", 10000},   {65536, "64k_lat", "64k_bw", 1000},
    {98304, "96k_lat", "96k_bw", 1000},    {131072, "128k_lat", "128k_bw", 1000},
    {196608, "192k_lat", "192k_bw", 1000}, {262144, "256k_lat", "256k_bw", 1000},
    {393216, "384k_lat", "384k_bw", 1000}, {524288, "512k_lat", "512k_bw", 1000},
    {786432, "768k_lat", "768k_bw", 1000}, {1048576, "1m_lat", "1m_bw", 100},
    {1572864, "1.5m_lat", "1.5m_bw", 100}, {2097152, "2m_lat", "2m_bw", 100},
    {3145728, "3m_lat", "3m_bw", 100},     {4194304, "4m_lat", "4m_bw", 100},
    {6291456, "6m_lat", "6m_bw", 100},
};

void check_latency_series(const connection_plan& connection, const std::vector<expected_row>& rows,
                          std::size_t inline_size) {
    BOOST_TEST((connection.series == series_kind::latency));
    BOOST_TEST((connection.inline_size == inline_size));
    BOOST_TEST_REQUIRE(connection.tests.size() == rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto& test = connection.tests[i];
        BOOST_TEST_CONTEXT("latency row " << i) {
            BOOST_TEST(test.name == rows[i].latency_name);
            BOOST_TEST(test.transfer_size == rows[i].size);
            BOOST_TEST(test.transfer_count == 1U);
            BOOST_TEST(test.iterations == rows[i].count);
        }
    }
}

void check_bandwidth_series(const connection_plan& connection,
                            const std::vector<expected_row>& rows) {
    BOOST_TEST((connection.series == series_kind::bandwidth));
    BOOST_TEST((connection.inline_size == std::size_t{0}));
    BOOST_TEST_REQUIRE(connection.tests.size() == rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto& test = connection.tests[i];
        BOOST_TEST_CONTEXT("bandwidth row " << i) {
            BOOST_TEST(test.name == rows[i].bandwidth_name);
            BOOST_TEST(test.transfer_size == rows[i].size);
            BOOST_TEST(test.transfer_count == rows[i].count);
            BOOST_TEST(test.iterations == 1U);
        }
    }
}

} // namespace

BOOST_AUTO_TEST_CASE(size_table_is_riostreams) {
    const auto table = coriostream::size_table();
    BOOST_TEST_REQUIRE(table.size() == riostream_table.size());
    std::vector<std::size_t> in_default_series;
    for (std::size_t i = 0; i < table.size(); ++i) {
        BOOST_TEST(table[i].bytes == riostream_table[i].size);
        if (table[i].in_default_series)
            in_default_series.push_back(table[i].bytes);
    }
    BOOST_TEST(in_default_series == (std::vector<std::size_t>{64, 4096, 65536, 1048576}),
               boost::test_tools::per_element());
    BOOST_TEST(coriostream::largest_table_size() == 6291456U);
}

BOOST_AUTO_TEST_CASE(size_to_count_steps_at_1k_64k_and_1m) {
    BOOST_TEST(size_to_count(0) == 100000U);
    BOOST_TEST(size_to_count(1023) == 100000U);
    BOOST_TEST(size_to_count(1024) == 10000U);
    BOOST_TEST(size_to_count(65535) == 10000U);
    BOOST_TEST(size_to_count(65536) == 1000U);
    BOOST_TEST(size_to_count(1048575) == 1000U);
    BOOST_TEST(size_to_count(1048576) == 100U);
    BOOST_TEST(size_to_count(6291456) == 100U);
}

BOOST_AUTO_TEST_CASE(default_run_is_four_sizes_on_two_connections) {
    const options opts;
    const auto plan = make_test_plan(opts);
    BOOST_TEST_REQUIRE(plan.size() == 2U);
    const std::vector<expected_row> defaults = {riostream_table[0], riostream_table[11],
                                                riostream_table[19], riostream_table[27]};
    check_latency_series(plan[0], defaults, 64);
    check_bandwidth_series(plan[1], defaults);
}

BOOST_AUTO_TEST_CASE(latency_series_takes_the_inline_size_bandwidth_series_zero) {
    options opts;
    opts.inline_size = 200;
    const auto plan = make_test_plan(opts);
    BOOST_TEST_REQUIRE(plan.size() == 2U);
    BOOST_TEST((plan[0].inline_size == std::size_t{200}));
    BOOST_TEST((plan[1].inline_size == std::size_t{0}));
}

BOOST_AUTO_TEST_CASE(all_sizes_runs_the_whole_table_in_both_series_in_order) {
    options opts;
    opts.all_sizes = true;
    const auto plan = make_test_plan(opts);
    BOOST_TEST_REQUIRE(plan.size() == 2U);
    check_latency_series(plan[0], riostream_table, 64);
    check_bandwidth_series(plan[1], riostream_table);
}

BOOST_AUTO_TEST_CASE(custom_test_fills_riostreams_code_defaults) {
    options opts;
    opts.iterations = 5;
    const auto plan = make_test_plan(opts);
    BOOST_TEST_REQUIRE(plan.size() == 1U);
    BOOST_TEST((plan[0].series == series_kind::custom));
    BOOST_TEST(!plan[0].inline_size.has_value());
    BOOST_TEST_REQUIRE(plan[0].tests.size() == 1U);
    const auto& test = plan[0].tests[0];
    BOOST_TEST(test.name == "custom");
    BOOST_TEST(test.iterations == 5U);
    BOOST_TEST(test.transfer_count == 1000U);
    BOOST_TEST(test.transfer_size == 1000U);
}

BOOST_AUTO_TEST_CASE(each_of_count_and_size_alone_makes_a_custom_test) {
    options by_count;
    by_count.transfer_count = 3;
    const auto count_test = make_test_plan(by_count).at(0).tests.at(0);
    BOOST_TEST(count_test.iterations == 1U);
    BOOST_TEST(count_test.transfer_count == 3U);
    BOOST_TEST(count_test.transfer_size == 1000U);

    options by_size;
    by_size.transfer_size = 64;
    const auto size_test = make_test_plan(by_size).at(0).tests.at(0);
    BOOST_TEST(size_test.iterations == 1U);
    BOOST_TEST(size_test.transfer_count == 1000U);
    BOOST_TEST(size_test.transfer_size == 64U);
}

BOOST_AUTO_TEST_CASE(custom_test_wins_over_all_sizes_as_in_riostream) {
    options opts;
    opts.all_sizes = true;
    opts.iterations = 2;
    const auto plan = make_test_plan(opts);
    BOOST_TEST_REQUIRE(plan.size() == 1U);
    BOOST_TEST(plan[0].tests.size() == 1U);
    BOOST_TEST(plan[0].tests[0].transfer_size == 1000U);
}

BOOST_AUTO_TEST_CASE(custom_test_ignores_the_inline_size) {
    options opts;
    opts.transfer_size = 64;
    opts.inline_size = 200;
    BOOST_TEST(!make_test_plan(opts).at(0).inline_size.has_value());
}

BOOST_AUTO_TEST_CASE(total_counts_both_directions) {
    BOOST_TEST(coriostream::total_bytes({"x", 64, 1, 100000}) == 12800000U);
    // Past 32 bits, where riostream's int factors would overflow but for its
    // cast to long long.
    BOOST_TEST(coriostream::total_bytes({"x", 6291456, 1000, 1000}) == 12582912000000U);
}

BOOST_AUTO_TEST_CASE(test_names_keep_four_characters_of_the_size) {
    BOOST_TEST(coriostream::test_name(series_kind::latency, 1536) == "1.5k_lat");
    BOOST_TEST(coriostream::test_name(series_kind::bandwidth, 1572864) == "1.5m_bw");
    // Not in the table, but riostream's 5-byte buffer would cut it so.
    BOOST_TEST(coriostream::test_name(series_kind::latency, 1047552) == "1023_lat");
    BOOST_TEST(coriostream::test_name(series_kind::custom, 64) == "custom");
}
