#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "options.hpp"

namespace coriostream {

/// What riostream runs when none of -I, -C, -S n is given: a latency series
/// on one connection, then a bandwidth series on a fresh one.
enum class series_kind { latency, bandwidth, custom };

/// One row of riostream's size table.
struct table_size {
    std::size_t bytes;
    /// The four sizes run without -S all: 64, 4k, 64k and 1m.
    bool in_default_series;
};

/// A custom test fills what -I, -C and -S leave out with riostream's code
/// defaults (its man page claims 1000 iterations of 1 transfer instead).
inline constexpr std::size_t custom_default_iterations = 1;
inline constexpr std::size_t custom_default_transfer_count = 1000;
inline constexpr std::size_t custom_default_transfer_size = 1000;

/// One row of output: iterations of transfer_count transfers of
/// transfer_size bytes each way.
struct test_case {
    std::string name;
    std::size_t transfer_size;
    std::size_t transfer_count;
    std::size_t iterations;
};

/// The tests that share one connection. riostream connects afresh for each
/// series because RDMA_INLINE must be set before the connection exists.
struct connection_plan {
    series_kind series;
    /// RDMA_INLINE to set before connecting: -i for the latency series, 0 for
    /// the bandwidth series. Empty for a custom test, which leaves rsockets'
    /// own default (64, or /etc/rdma/rsocket/inline_default) and ignores -i.
    /// Kernel sockets have no such option and ignore it.
    std::optional<std::size_t> inline_size;
    std::vector<test_case> tests;
};

/// riostream's test_size[]: 64 bytes, then every power of two from 128 to
/// 4m and the size halfway to the next one, 33 sizes in all.
std::span<const table_size> size_table();
std::size_t largest_table_size();

/// How many round trips a series gives to one size: riostream's
/// size_to_count, which aims at comparable run times across sizes.
std::size_t size_to_count(std::size_t transfer_size);

/// Bytes moved by a test in both directions together, the "total" column.
std::uint64_t total_bytes(const test_case& test);

/// "64_lat", "1.5k_bw", "custom": riostream's test names.
std::string test_name(series_kind series, std::size_t transfer_size);

test_case latency_test(std::size_t transfer_size);
test_case bandwidth_test(std::size_t transfer_size);

/// The connections to make, in order, and the tests on each. Expects
/// options that passed validate().
std::vector<connection_plan> make_test_plan(const options& opts);

std::string_view to_string(series_kind value);

} // namespace coriostream
