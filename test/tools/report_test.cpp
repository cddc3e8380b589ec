#define BOOST_TEST_MODULE report
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

// Boost.JSON without its compiled library: this file builds it in.
#include <boost/json/src.hpp>

#include <coriostream/report.hpp>
#include <coriostream/test_plan.hpp>

// The expected strings below were printed by rdma-core v44's own size_str,
// cnt_str and show_perf (librdmacm/examples/common.c and riostream.c),
// compiled unchanged into a scratch program and fed the same inputs.

using coriostream::format_count;
using coriostream::format_size;
using coriostream::output_format;
using coriostream::report_writer;
using coriostream::run_metadata;
using coriostream::table_header;
using coriostream::table_row;
using coriostream::test_case;
using coriostream::test_result;

namespace {

test_result result(std::string name, std::size_t size, std::size_t transfers,
                   std::size_t iterations, std::int64_t usec) {
    return {test_case{std::move(name), size, transfers, iterations},
            std::chrono::microseconds(usec)};
}

run_metadata metadata() {
    return {"client", "rsocket", "iomap", "marker", 2, 3};
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        lines.push_back(line);
    return lines;
}

std::vector<std::string> split_csv(const std::string& line) {
    std::vector<std::string> fields(1);
    for (const char c : line) {
        if (c == ',')
            fields.emplace_back();
        else
            fields.back() += c;
    }
    return fields;
}

} // namespace

BOOST_AUTO_TEST_CASE(size_below_one_kib_is_plain_bytes) {
    BOOST_TEST(format_size(0) == "0");
    BOOST_TEST(format_size(1) == "1");
    BOOST_TEST(format_size(63) == "63");
    BOOST_TEST(format_size(64) == "64");
    BOOST_TEST(format_size(1000) == "1000");
    BOOST_TEST(format_size(1023) == "1023");
}

BOOST_AUTO_TEST_CASE(size_is_truncated_with_one_decimal_below_ten) {
    BOOST_TEST(format_size(1024) == "1k");
    BOOST_TEST(format_size(1025) == "1k");
    BOOST_TEST(format_size(1100) == "1k");
    BOOST_TEST(format_size(1536) == "1.5k");
    BOOST_TEST(format_size(2047) == "1.9k");
    BOOST_TEST(format_size(10239) == "9.9k");
    BOOST_TEST(format_size(10240) == "10k");
    BOOST_TEST(format_size(98304) == "96k");
    BOOST_TEST(format_size(1048575) == "1023k");
}

BOOST_AUTO_TEST_CASE(size_in_mebibytes_and_gibibytes) {
    BOOST_TEST(format_size(1048576) == "1m");
    BOOST_TEST(format_size(1572864) == "1.5m");
    BOOST_TEST(format_size(6291456) == "6m");
    BOOST_TEST(format_size(12800000) == "12m");
    BOOST_TEST(format_size((std::uint64_t{1} << 30) - 1) == "1023m");
    BOOST_TEST(format_size(std::uint64_t{1} << 30) == "1g");
    BOOST_TEST(format_size(1610612736) == "1.5g");
    BOOST_TEST(format_size(10737418240) == "10g");
    BOOST_TEST(format_size(12884901889) == "12g");
}

BOOST_AUTO_TEST_CASE(count_is_truncated_in_decimal_units) {
    BOOST_TEST(format_count(0) == "0");
    BOOST_TEST(format_count(1) == "1");
    BOOST_TEST(format_count(999) == "999");
    BOOST_TEST(format_count(1000) == "1k");
    BOOST_TEST(format_count(1500) == "1k");
    BOOST_TEST(format_count(999999) == "999k");
    BOOST_TEST(format_count(1000000) == "1m");
    BOOST_TEST(format_count(12800000) == "12m");
    BOOST_TEST(format_count(999999999) == "999m");
    BOOST_TEST(format_count(1000000000) == "1b");
    BOOST_TEST(format_count(12345678901) == "12b");
}

BOOST_AUTO_TEST_CASE(header_matches_riostream_byte_for_byte) {
    BOOST_TEST(table_header() ==
               "name      bytes   xfers   iters   total       time     Gb/sec    usec/xfer");
}

BOOST_AUTO_TEST_CASE(rows_of_the_default_series) {
    BOOST_TEST(table_row(result("64_lat", 64, 1, 100000, 3920123)) ==
               "64_lat    64      1       100k    12m         3.92s      0.03      19.60");
    BOOST_TEST(table_row(result("4k_lat", 4096, 1, 10000, 16777217)) ==
               "4k_lat    4k      1       10k     78m        16.78s      0.04     838.86");
    BOOST_TEST(table_row(result("1m_bw", 1048576, 100, 1, 230456)) ==
               "1m_bw     1m      100     1       200m        0.23s      7.28    1152.28");
    BOOST_TEST(table_row(result("3k_lat", 3072, 1, 10000, 987654)) ==
               "3k_lat    3k      1       10k     58m         0.99s      0.50      49.38");
    BOOST_TEST(table_row(result("1.5m_bw", 1572864, 100, 1, 99999999)) ==
               "1.5m_bw   1.5m    100     1       300m      100.00s      0.03  500000.00");
}

BOOST_AUTO_TEST_CASE(rows_of_custom_tests) {
    BOOST_TEST(table_row(result("custom", 100, 7, 3, 1117)) ==
               "custom    100     7       3       4.1k        0.00s      0.03      26.60");
    BOOST_TEST(table_row(result("custom", 1000, 1000, 1, 1)) ==
               "custom    1000    1k      1       1.9m        0.00s  16000.00       0.00");
    BOOST_TEST(table_row(result("custom", 6291456, 1000, 1000, 123456789)) ==
               "custom    6m      1k      1k      11718g    123.46s    815.37      61.73");
    BOOST_TEST(table_row(result("custom", 786432, 1024, 1, 1000000)) ==
               "custom    768k    1k      1       1.5g        1.00s     12.88     488.28");
}

BOOST_AUTO_TEST_CASE(row_keeps_riostreams_single_precision) {
    // 16777219 us is not a float; riostream's float holds 16777220, and half
    // of it is what it prints, where double arithmetic would give 8388609.50.
    BOOST_TEST(table_row(result("custom", 64, 1, 1, 16777219)) ==
               "custom    64      1       1       128        16.78s      0.00 8388610.00");
    // Wide values overflow their columns and run into each other, as in
    // riostream.
    BOOST_TEST(table_row(result("custom", 1, 1, 1, 123456789012)) ==
               "custom    1       1       1       2       123456.79s      0.0061728395264.00");
}

BOOST_AUTO_TEST_CASE(row_of_a_test_too_quick_to_time_shows_infinite_rate) {
    BOOST_TEST(table_row(result("custom", 64, 1, 1, 0)) ==
               "custom    64      1       1       128         0.00s       inf       0.00");
}

BOOST_AUTO_TEST_CASE(table_writer_prints_the_header_once_then_rows) {
    std::ostringstream out;
    report_writer writer(out, output_format::table, metadata());
    writer.write_header();
    writer.write(result("64_lat", 64, 1, 100000, 3920123));
    writer.write_header();
    writer.write(result("1m_bw", 1048576, 100, 1, 230456));
    BOOST_TEST(out.str() ==
               "name      bytes   xfers   iters   total       time     Gb/sec    usec/xfer\n"
               "64_lat    64      1       100k    12m         3.92s      0.03      19.60\n"
               "1m_bw     1m      100     1       200m        0.23s      7.28    1152.28\n");
}

BOOST_AUTO_TEST_CASE(first_row_brings_the_header_along) {
    std::ostringstream out;
    report_writer writer(out, output_format::table, metadata());
    writer.write(result("custom", 100, 7, 3, 1117));
    BOOST_TEST(lines_of(out.str()).size() == 2U);
    BOOST_TEST(lines_of(out.str()).front() == table_header());
}

BOOST_AUTO_TEST_CASE(json_is_one_object_per_row_with_numbers_and_metadata) {
    std::ostringstream out;
    report_writer writer(out, output_format::json, metadata());
    writer.write_header();
    writer.write(result("64_lat", 64, 1, 100000, 3920123));
    writer.write(result("custom", 100, 7, 3, 1117));

    const auto lines = lines_of(out.str());
    BOOST_TEST_REQUIRE(lines.size() == 2U);
    const auto row = boost::json::parse(lines[0]).as_object();
    BOOST_TEST(row.size() == 14U);
    BOOST_TEST(row.at("name").as_string() == "64_lat");
    BOOST_TEST(row.at("bytes").to_number<std::uint64_t>() == 64U);
    BOOST_TEST(row.at("transfers").to_number<std::uint64_t>() == 1U);
    BOOST_TEST(row.at("iterations").to_number<std::uint64_t>() == 100000U);
    BOOST_TEST(row.at("total_bytes").to_number<std::uint64_t>() == 12800000U);
    BOOST_TEST(row.at("seconds").as_double() == 3.920123);
    BOOST_TEST(row.at("gbps").as_double() == 12800000.0 * 8 / (1000 * 3920123.0));
    BOOST_TEST(row.at("usec_per_xfer").as_double() == 3920123.0 / 100000 / 2);
    BOOST_TEST(row.at("role").as_string() == "client");
    BOOST_TEST(row.at("transport").as_string() == "rsocket");
    BOOST_TEST(row.at("data_path").as_string() == "iomap");
    BOOST_TEST(row.at("notify").as_string() == "marker");
    BOOST_TEST(row.at("streams").to_number<int>() == 2);
    BOOST_TEST(row.at("threads").to_number<int>() == 3);
    BOOST_TEST(boost::json::parse(lines[1]).as_object().at("name").as_string() == "custom");
}

BOOST_AUTO_TEST_CASE(json_has_no_rate_for_a_test_too_quick_to_time) {
    std::ostringstream out;
    report_writer writer(out, output_format::json, metadata());
    writer.write(result("custom", 64, 1, 1, 0));
    const auto row = boost::json::parse(out.str()).as_object();
    BOOST_TEST(row.at("gbps").is_null());
    BOOST_TEST(row.at("seconds").to_number<double>() == 0.0);
}

BOOST_AUTO_TEST_CASE(csv_has_a_header_then_unformatted_rows) {
    std::ostringstream out;
    report_writer writer(out, output_format::csv, metadata());
    writer.write_header();
    writer.write(result("1m_bw", 1048576, 100, 1, 230456));
    writer.write(result("custom", 64, 1, 1, 0));

    const auto lines = lines_of(out.str());
    BOOST_TEST_REQUIRE(lines.size() == 3U);
    BOOST_TEST(lines[0] == "name,bytes,transfers,iterations,total_bytes,seconds,gbps,usec_per_xfer,"
                           "role,transport,data_path,notify,streams,threads");
    const auto row = split_csv(lines[1]);
    BOOST_TEST_REQUIRE(row.size() == 14U);
    BOOST_TEST(row[0] == "1m_bw");
    BOOST_TEST(row[1] == "1048576");
    BOOST_TEST(row[2] == "100");
    BOOST_TEST(row[3] == "1");
    BOOST_TEST(row[4] == "209715200");
    BOOST_TEST(std::stod(row[5]) == 0.230456);
    BOOST_TEST(std::stod(row[6]) == 209715200.0 * 8 / (1000 * 230456.0));
    BOOST_TEST(std::stod(row[7]) == 230456.0 / 1 / 200);
    BOOST_TEST(row[8] == "client");
    BOOST_TEST(row[12] == "2");
    BOOST_TEST(row[13] == "3");
    BOOST_TEST(split_csv(lines[2])[6] == "");
}

BOOST_AUTO_TEST_CASE(plan_as_a_table_groups_tests_by_connection) {
    coriostream::options opts;
    std::ostringstream out;
    report_writer writer(out, output_format::table, metadata());
    writer.write_plan(coriostream::make_test_plan(opts));
    BOOST_TEST(out.str() == "name      bytes   xfers   iters   total\n"
                            "# connection 1: latency series, inline size 64\n"
                            "64_lat    64      1       100k    12m\n"
                            "4k_lat    4k      1       10k     78m\n"
                            "64k_lat   64k     1       1k      125m\n"
                            "1m_lat    1m      1       100     200m\n"
                            "# connection 2: bandwidth series, inline size 0\n"
                            "64_bw     64      100k    1       12m\n"
                            "4k_bw     4k      10k     1       78m\n"
                            "64k_bw    64k     1k      1       125m\n"
                            "1m_bw     1m      100     1       200m\n");
}

BOOST_AUTO_TEST_CASE(plan_of_a_custom_test_leaves_inline_to_rsockets) {
    coriostream::options opts;
    opts.transfer_count = 7;
    std::ostringstream table;
    report_writer(table, output_format::table, metadata()).write_plan(make_test_plan(opts));
    BOOST_TEST(table.str() == "name      bytes   xfers   iters   total\n"
                              "# connection 1: custom test, rsockets' default inline size\n"
                              "custom    1000    7       1       13k\n");

    std::ostringstream json;
    report_writer(json, output_format::json, metadata()).write_plan(make_test_plan(opts));
    const auto row = boost::json::parse(json.str()).as_object();
    BOOST_TEST(row.at("connection").to_number<int>() == 1);
    BOOST_TEST(row.at("series").as_string() == "custom");
    BOOST_TEST(row.at("inline_size").is_null());
    BOOST_TEST(row.at("total_bytes").to_number<std::uint64_t>() == 14000U);

    std::ostringstream csv;
    report_writer(csv, output_format::csv, metadata()).write_plan(make_test_plan(opts));
    const auto lines = lines_of(csv.str());
    BOOST_TEST_REQUIRE(lines.size() == 2U);
    BOOST_TEST(lines[0] == "connection,series,inline_size,name,bytes,transfers,iterations,"
                           "total_bytes,role,transport,data_path,notify,streams,threads");
    BOOST_TEST(lines[1] == "1,custom,,custom,1000,7,1,14000,client,rsocket,iomap,marker,2,3");
}

BOOST_AUTO_TEST_CASE(metadata_describes_the_run_as_asked) {
    coriostream::options opts;
    BOOST_TEST(coriostream::describe_run(opts).role == "server");
    BOOST_TEST(coriostream::describe_run(opts).transport == "auto");
    opts.server_address = "peer";
    opts.kernel_sockets = true;
    opts.data_path = coriostream::data_path_kind::stream;
    opts.notify = coriostream::notify_method::message;
    opts.streams = 4;
    const auto described = coriostream::describe_run(opts);
    BOOST_TEST(described.role == "client");
    BOOST_TEST(described.transport == "tcp");
    BOOST_TEST(described.data_path == "stream");
    BOOST_TEST(described.notify == "message");
    BOOST_TEST(described.streams == 4U);
    opts = {};
    opts.loopback = true;
    BOOST_TEST(coriostream::describe_run(opts).role == "loopback");
}
