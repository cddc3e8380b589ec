#include "report.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <ostream>
#include <string_view>
#include <system_error>
#include <utility>

namespace coriostream {

namespace {

constexpr std::uint64_t kib = std::uint64_t{1} << 10;
constexpr std::uint64_t mib = std::uint64_t{1} << 20;
constexpr std::uint64_t gib = std::uint64_t{1} << 30;

constexpr std::string_view csv_result_columns =
    "name,bytes,transfers,iterations,total_bytes,seconds,gbps,usec_per_xfer";
constexpr std::string_view csv_plan_columns =
    "connection,series,inline_size,name,bytes,transfers,iterations,total_bytes";
constexpr std::string_view csv_metadata_columns = "role,transport,data_path,notify,streams,threads";

// snprintf twice, measuring then writing, because a %f of an extreme value
// has no width bound worth hard-coding.
template <typename Print> std::string printed(Print print) {
    const int length = print(nullptr, 0);
    if (length <= 0)
        return {};
    std::string text(static_cast<std::size_t>(length), '\0');
    print(text.data(), text.size() + 1);
    return text;
}

std::string first_five_columns(std::string_view name, std::string_view bytes,
                               std::string_view transfers, std::string_view iterations,
                               std::string_view total) {
    return printed([&](char* buffer, std::size_t size) {
        return std::snprintf(buffer, size, "%-10.*s%-8.*s%-8.*s%-8.*s%-8.*s",
                             static_cast<int>(name.size()), name.data(),
                             static_cast<int>(bytes.size()), bytes.data(),
                             static_cast<int>(transfers.size()), transfers.data(),
                             static_cast<int>(iterations.size()), iterations.data(),
                             static_cast<int>(total.size()), total.data());
    });
}

std::string without_trailing_spaces(std::string text) {
    text.erase(text.find_last_not_of(' ') + 1);
    return text;
}

// Shortest text that reads back as the same double; json and csv are for
// programs, which should not inherit the table's rounding.
std::string number(double value) {
    std::array<char, 32> buffer{};
    const auto [end, error] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
    if (error != std::errc{})
        return "0";
    return std::string(buffer.data(), end);
}

std::string json_string(std::string_view text) {
    std::string quoted = "\"";
    for (const char c : text) {
        switch (c) {
        case '"':
            quoted += "\\\"";
            break;
        case '\\':
            quoted += "\\\\";
            break;
        default:
            if (static_cast<unsigned char>(c) < 0x20) {
                std::array<char, 8> escaped{};
                std::snprintf(escaped.data(), escaped.size(), "\\u%04x", static_cast<unsigned>(c));
                quoted += escaped.data();
            } else {
                quoted += c;
            }
        }
    }
    return quoted + '"';
}

// RFC 4180: quote a field that holds a separator, a quote or a line break.
std::string csv_field(std::string_view text) {
    if (text.find_first_of(",\"\r\n") == std::string_view::npos)
        return std::string(text);
    std::string quoted = "\"";
    for (const char c : text) {
        if (c == '"')
            quoted += '"';
        quoted += c;
    }
    return quoted + '"';
}

// The measured values at full precision; the table recomputes them the way
// riostream does.
struct rates {
    double seconds;
    double gbps; ///< infinite when nothing measurable elapsed
    double usec_per_xfer;
};

rates rates_of(const test_result& result) {
    const auto usec = static_cast<double>(result.elapsed.count());
    const auto& test = result.test;
    const auto bits = static_cast<double>(total_bytes(test)) * 8;
    return {usec / 1e6, usec > 0 ? bits / (1000 * usec) : std::numeric_limits<double>::infinity(),
            usec / static_cast<double>(test.iterations) /
                (static_cast<double>(test.transfer_count) * 2)};
}

std::string series_description(const connection_plan& connection) {
    if (connection.series == series_kind::custom)
        return "custom test";
    return std::string(to_string(connection.series)) + " series";
}

std::string inline_description(const connection_plan& connection) {
    if (!connection.inline_size)
        return "rsockets' default inline size";
    return "inline size " + std::to_string(*connection.inline_size);
}

} // namespace

run_metadata describe_run(const options& opts) {
    const char* role = opts.loopback ? "loopback" : is_client(opts) ? "client" : "server";
    return {role,
            std::string(to_string(effective_transport(opts))),
            std::string(to_string(opts.data_path.value_or(data_path_kind::iomap))),
            std::string(to_string(opts.notify.value_or(notify_method::marker))),
            opts.streams,
            opts.threads};
}

std::string format_size(std::uint64_t bytes) {
    std::uint64_t base = 1;
    std::string_view unit;
    if (bytes >= gib) {
        base = gib;
        unit = "g";
    } else if (bytes >= mib) {
        base = mib;
        unit = "m";
    } else if (bytes >= kib) {
        base = kib;
        unit = "k";
    }
    const auto whole = bytes / base;
    const auto tenths = whole < 10 ? (bytes % base) * 10 / base : 0;
    auto text = std::to_string(whole);
    if (tenths != 0)
        text += "." + std::to_string(tenths);
    return text += unit;
}

std::string format_count(std::uint64_t count) {
    if (count >= 1'000'000'000)
        return std::to_string(count / 1'000'000'000) + "b";
    if (count >= 1'000'000)
        return std::to_string(count / 1'000'000) + "m";
    if (count >= 1'000)
        return std::to_string(count / 1'000) + "k";
    return std::to_string(count);
}

std::string table_header() {
    return printed([](char* buffer, std::size_t size) {
        return std::snprintf(buffer, size, "%-10s%-8s%-8s%-8s%-8s%8s %10s%13s", "name", "bytes",
                             "xfers", "iters", "total", "time", "Gb/sec", "usec/xfer");
    });
}

std::string table_row(const test_result& result) {
    const auto& test = result.test;
    // show_perf keeps the elapsed time in a float and divides it by int
    // counts in float; doing the same keeps every digit riostream prints.
    const auto usec = static_cast<float>(result.elapsed.count());
    const auto bits = static_cast<double>(total_bytes(test)) * 8;
    const auto per_xfer =
        usec / static_cast<float>(test.iterations) / static_cast<float>(test.transfer_count * 2);
    return first_five_columns(test.name, format_size(test.transfer_size),
                              format_count(test.transfer_count), format_count(test.iterations),
                              format_size(total_bytes(test))) +
           printed([&](char* buffer, std::size_t size) {
               return std::snprintf(buffer, size, "%8.2fs%10.2f%11.2f", usec / 1000000.,
                                    bits / (1000. * usec), static_cast<double>(per_xfer));
           });
}

report_writer::report_writer(std::ostream& out, output_format format, run_metadata metadata)
    : out_(out), format_(format), metadata_(std::move(metadata)) {
}

void report_writer::write_header() {
    if (header_written_)
        return;
    header_written_ = true;
    switch (format_) {
    case output_format::table:
        out_ << table_header() << '\n';
        break;
    case output_format::csv:
        out_ << csv_result_columns << ',' << csv_metadata_columns << '\n';
        break;
    case output_format::json:
        break;
    }
    failure_.flush(out_);
}

void report_writer::write(const test_result& result) {
    write_header();
    switch (format_) {
    case output_format::table:
        out_ << table_row(result) << '\n';
        break;
    case output_format::json:
        write_json_row(result);
        break;
    case output_format::csv:
        write_csv_row(result);
        break;
    }
    failure_.flush(out_);
}

void report_writer::write_plan(std::span<const connection_plan> plan) {
    switch (format_) {
    case output_format::table:
        out_ << without_trailing_spaces(
                    first_five_columns("name", "bytes", "xfers", "iters", "total"))
             << '\n';
        break;
    case output_format::csv:
        out_ << csv_plan_columns << ',' << csv_metadata_columns << '\n';
        break;
    case output_format::json:
        break;
    }
    std::size_t connection_number = 0;
    for (const auto& connection : plan) {
        ++connection_number;
        if (format_ == output_format::table)
            out_ << "# connection " << connection_number << ": " << series_description(connection)
                 << ", " << inline_description(connection) << '\n';
        for (const auto& test : connection.tests)
            write_planned_test(connection_number, connection, test);
    }
    failure_.flush(out_);
}

void report_writer::write_json_row(const test_result& result) {
    const auto& test = result.test;
    const auto measured = rates_of(result);
    out_ << "{\"name\":" << json_string(test.name) << ",\"bytes\":" << test.transfer_size
         << ",\"transfers\":" << test.transfer_count << ",\"iterations\":" << test.iterations
         << ",\"total_bytes\":" << total_bytes(test) << ",\"seconds\":"
         << number(measured.seconds)
         // json has no infinity: a test too quick to time has no rate
         << ",\"gbps\":" << (std::isinf(measured.gbps) ? "null" : number(measured.gbps))
         << ",\"usec_per_xfer\":" << number(measured.usec_per_xfer);
    write_json_metadata();
    out_ << "}\n";
}

void report_writer::write_csv_row(const test_result& result) {
    const auto& test = result.test;
    const auto measured = rates_of(result);
    out_ << csv_field(test.name) << ',' << test.transfer_size << ',' << test.transfer_count << ','
         << test.iterations << ',' << total_bytes(test) << ',' << number(measured.seconds) << ','
         << (std::isinf(measured.gbps) ? "" : number(measured.gbps)) << ','
         << number(measured.usec_per_xfer);
    write_csv_metadata();
    out_ << '\n';
}

void report_writer::write_planned_test(std::size_t connection_number,
                                       const connection_plan& connection, const test_case& test) {
    switch (format_) {
    case output_format::table:
        out_ << without_trailing_spaces(first_five_columns(
                    test.name, format_size(test.transfer_size), format_count(test.transfer_count),
                    format_count(test.iterations), format_size(total_bytes(test))))
             << '\n';
        break;
    case output_format::json:
        out_ << "{\"connection\":" << connection_number
             << ",\"series\":" << json_string(to_string(connection.series)) << ",\"inline_size\":"
             << (connection.inline_size ? std::to_string(*connection.inline_size) : "null")
             << ",\"name\":" << json_string(test.name) << ",\"bytes\":" << test.transfer_size
             << ",\"transfers\":" << test.transfer_count << ",\"iterations\":" << test.iterations
             << ",\"total_bytes\":" << total_bytes(test);
        write_json_metadata();
        out_ << "}\n";
        break;
    case output_format::csv:
        out_ << connection_number << ',' << to_string(connection.series) << ','
             << (connection.inline_size ? std::to_string(*connection.inline_size) : "") << ','
             << csv_field(test.name) << ',' << test.transfer_size << ',' << test.transfer_count
             << ',' << test.iterations << ',' << total_bytes(test);
        write_csv_metadata();
        out_ << '\n';
        break;
    }
}

void report_writer::write_json_metadata() {
    out_ << ",\"role\":" << json_string(metadata_.role)
         << ",\"transport\":" << json_string(metadata_.transport)
         << ",\"data_path\":" << json_string(metadata_.data_path)
         << ",\"notify\":" << json_string(metadata_.notify) << ",\"streams\":" << metadata_.streams
         << ",\"threads\":" << metadata_.threads;
}

void report_writer::write_csv_metadata() {
    out_ << ',' << csv_field(metadata_.role) << ',' << csv_field(metadata_.transport) << ','
         << csv_field(metadata_.data_path) << ',' << csv_field(metadata_.notify) << ','
         << metadata_.streams << ',' << metadata_.threads;
}

} // namespace coriostream
