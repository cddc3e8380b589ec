#include "test_plan.hpp"

#include <array>

#include "report.hpp"

namespace coriostream {

namespace {

constexpr std::size_t kib = std::size_t{1} << 10;
constexpr std::size_t mib = std::size_t{1} << 20;

// Paired as riostream lays them out: each power of two, then the size
// halfway to the next.
// clang-format off
constexpr std::array<table_size, 33> sizes{{
    {64, true},
    {128, false},        {192, false},
    {256, false},        {384, false},
    {512, false},        {768, false},
    {1 * kib, false},    {1 * kib + 512, false},
    {2 * kib, false},    {3 * kib, false},
    {4 * kib, true},     {6 * kib, false},
    {8 * kib, false},    {12 * kib, false},
    {16 * kib, false},   {24 * kib, false},
    {32 * kib, false},   {48 * kib, false},
    {64 * kib, true},    {96 * kib, false},
    {128 * kib, false},  {192 * kib, false},
    {256 * kib, false},  {384 * kib, false},
    {512 * kib, false},  {768 * kib, false},
    {1 * mib, true},     {1 * mib + 512 * kib, false},
    {2 * mib, false},    {3 * mib, false},
    {4 * mib, false},    {6 * mib, false},
}};
// clang-format on

// riostream formats the size into a 5-byte buffer, so a size string longer
// than four characters would lose its tail; none in the table is that long.
constexpr std::size_t name_size_chars = 4;

connection_plan series_connection(series_kind series, std::optional<std::size_t> inline_size,
                                  bool all_sizes) {
    connection_plan connection{series, inline_size, {}};
    for (const auto& entry : sizes) {
        if (!all_sizes && !entry.in_default_series)
            continue;
        connection.tests.push_back(series == series_kind::latency ? latency_test(entry.bytes)
                                                                  : bandwidth_test(entry.bytes));
    }
    return connection;
}

} // namespace

std::span<const table_size> size_table() {
    return sizes;
}

std::size_t largest_table_size() {
    return sizes.back().bytes;
}

std::size_t size_to_count(std::size_t transfer_size) {
    if (transfer_size >= mib)
        return 100;
    if (transfer_size >= 64 * kib)
        return 1000;
    if (transfer_size >= kib)
        return 10000;
    return 100000;
}

std::uint64_t total_bytes(const test_case& test) {
    return std::uint64_t{test.iterations} * test.transfer_count * test.transfer_size * 2;
}

std::string test_name(series_kind series, std::size_t transfer_size) {
    if (series == series_kind::custom)
        return "custom";
    const auto size = format_size(transfer_size).substr(0, name_size_chars);
    return size + (series == series_kind::latency ? "_lat" : "_bw");
}

test_case latency_test(std::size_t transfer_size) {
    return {test_name(series_kind::latency, transfer_size), transfer_size, 1,
            size_to_count(transfer_size)};
}

test_case bandwidth_test(std::size_t transfer_size) {
    return {test_name(series_kind::bandwidth, transfer_size), transfer_size,
            size_to_count(transfer_size), 1};
}

std::vector<connection_plan> make_test_plan(const options& opts) {
    if (is_custom_test(opts)) {
        const test_case custom{test_name(series_kind::custom, 0),
                               opts.transfer_size.value_or(custom_default_transfer_size),
                               opts.transfer_count.value_or(custom_default_transfer_count),
                               opts.iterations.value_or(custom_default_iterations)};
        return {connection_plan{series_kind::custom, std::nullopt, {custom}}};
    }
    return {series_connection(series_kind::latency, opts.inline_size, opts.all_sizes),
            series_connection(series_kind::bandwidth, 0, opts.all_sizes)};
}

std::string_view to_string(series_kind value) {
    switch (value) {
    case series_kind::latency:
        return "latency";
    case series_kind::bandwidth:
        return "bandwidth";
    case series_kind::custom:
        return "custom";
    }
    return "unknown";
}

} // namespace coriostream
