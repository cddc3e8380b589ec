#include "datagram_report.hpp"

#include <cstdio>
#include <ostream>

#include "report.hpp"

namespace coriostream {

namespace {

constexpr const char* csv_columns =
    "name,bytes,datagrams,echo,transfers,lost,total_bytes,seconds,gbps,usec_per_xfer,transport";

std::uint64_t total_bytes(const datagram_result& r) { return r.transfers * r.size; }

std::string formatted(const char* format, auto... values) {
    char buffer[160];
    const int n = std::snprintf(buffer, sizeof buffer, format, values...);
    return std::string(buffer, n > 0 ? static_cast<std::size_t>(n) : 0);
}

} // namespace

std::string datagram_table_header() {
    return formatted("%-10s%-8s%-8s%-8s%8s %10s%13s", "name", "bytes", "xfers", "total", "time",
                     "Gb/sec", "usec/xfer");
}

std::string datagram_table_row(const datagram_result& r) {
    const auto usec = static_cast<float>(r.elapsed.count());
    const auto bytes = static_cast<long long>(total_bytes(r));
    return formatted("%-10s%-8s%-8s%-8s", r.name.c_str(), format_size(r.size).c_str(),
                     format_count(r.transfers).c_str(), format_size(total_bytes(r)).c_str()) +
           formatted("%8.2fs%10.2f%11.2f", usec / 1000000., (bytes * 8) / (1000. * usec),
                     static_cast<double>(usec / static_cast<float>(r.transfers)));
}

datagram_report_writer::datagram_report_writer(std::ostream& out, output_format format,
                                               std::string transport)
    : out_(out), format_(format), transport_(std::move(transport)) {}

void datagram_report_writer::write_header() {
    if (header_written_)
        return;
    header_written_ = true;
    if (format_ == output_format::table)
        out_ << datagram_table_header() << '\n';
    else if (format_ == output_format::csv)
        out_ << csv_columns << '\n';
    failure_.flush(out_);
}

void datagram_report_writer::write(const datagram_result& r) {
    write_header();
    const double seconds = static_cast<double>(r.elapsed.count()) / 1e6;
    const double usec = static_cast<double>(r.elapsed.count());
    const double gbps = usec > 0 ? static_cast<double>(total_bytes(r)) * 8 / (1000. * usec) : 0;
    const double per_xfer = r.transfers > 0 ? usec / static_cast<double>(r.transfers) : 0;
    switch (format_) {
    case output_format::table:
        out_ << datagram_table_row(r) << '\n';
        break;
    case output_format::json:
        out_ << "{\"name\":\"" << r.name << "\",\"bytes\":" << r.size
             << ",\"datagrams\":" << r.count << ",\"echo\":" << (r.echo ? "true" : "false")
             << ",\"transfers\":" << r.transfers << ",\"lost\":" << r.lost
             << ",\"total_bytes\":" << total_bytes(r) << ",\"seconds\":" << seconds
             << ",\"gbps\":" << gbps << ",\"usec_per_xfer\":" << per_xfer
             << ",\"transport\":\"" << transport_ << "\"}\n";
        break;
    case output_format::csv:
        out_ << r.name << ',' << r.size << ',' << r.count << ',' << (r.echo ? 1 : 0) << ','
             << r.transfers << ',' << r.lost << ',' << total_bytes(r) << ',' << seconds << ','
             << gbps << ',' << per_xfer << ',' << transport_ << '\n';
        break;
    }
    failure_.flush(out_);
}

} // namespace coriostream
