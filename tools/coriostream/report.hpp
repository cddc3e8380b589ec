#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>

#include "options.hpp"
#include "test_plan.hpp"
#include "write_failure.hpp"

namespace coriostream {

/// One finished test. riostream times with gettimeofday, so microseconds are
/// all the table ever sees.
struct test_result {
    test_case test;
    std::chrono::microseconds elapsed;
};

/// What every json and csv row repeats about the run, so that rows from
/// several runs can be pooled. The engine replaces transport "auto" with the
/// transport it picked.
struct run_metadata {
    std::string role; ///< client, server or loopback
    std::string transport;
    std::string data_path;
    std::string notify;
    std::size_t streams = 1;
    std::size_t threads = 1;
};

run_metadata describe_run(const options& opts);

/// riostream's size_str: binary units (k, m, g), truncated, with one decimal
/// only below 10 and only when it is not zero: 1536 is "1.5k", 1025 is "1k".
std::string format_size(std::uint64_t bytes);

/// riostream's cnt_str: decimal units (k, m, b), truncated: 1500 is "1k".
std::string format_count(std::uint64_t count);

/// riostream's header line, without the newline. Its last three columns are
/// wider than the numbers under them; riostream prints it so.
std::string table_header();

/// A row as riostream's show_perf prints it, without the newline, including
/// its arithmetic in single precision.
std::string table_row(const test_result& result);

/// Writes a report in one of the output formats: the header once, then a
/// row per finished test, each row flushed as it is written.
class report_writer {
public:
    report_writer(std::ostream& out, output_format format, run_metadata metadata);

    /// riostream prints the header before it connects, so a run that never
    /// connects still shows it. Only the first call writes anything; json
    /// has no header.
    void write_header();

    void write(const test_result& result);

    /// For --dry-run: the tests the plan would run, grouped by connection,
    /// without the measured columns.
    void write_plan(std::span<const connection_plan> plan);

    /// Whether every flush so far reached the stream.
    const write_failure& failure() const noexcept { return failure_; }

private:
    void write_json_row(const test_result& result);
    void write_csv_row(const test_result& result);
    void write_planned_test(std::size_t connection_number, const connection_plan& connection,
                            const test_case& test);
    void write_json_metadata();
    void write_csv_metadata();

    std::ostream& out_;
    output_format format_;
    run_metadata metadata_;
    bool header_written_ = false;
    write_failure failure_;
};

} // namespace coriostream
