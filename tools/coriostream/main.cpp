#include <cerrno>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>
#include <optional>
#include <ostream>
#include <string>

#include <fcntl.h>
#include <unistd.h>

#include <corio/rdma_available.hpp>
#include <corio/transport.hpp>

#include "datagram_session.hpp"
#include "options.hpp"
#include "report.hpp"
#include "run_settings.hpp"
#include "runner.hpp"
#include "test_plan.hpp"
#include "write_failure.hpp"

namespace {

constexpr int exit_usage = 1;
// riostream exits with -1 (255) for most failures, 0 even for a failed
// verification; coriostream exits 1 for every failure (see
// doc/riostream-compatibility.md).
constexpr int exit_failure = 1;

// The report goes to --output FILE or standard output. Returns false, with
// the reason on stderr, when the file cannot be written.
bool open_output(const coriostream::options& opts, std::ofstream& file) {
    if (!opts.output_file)
        return true;
    file.open(*opts.output_file);
    if (file)
        return true;
    std::cerr << "coriostream: cannot write " << *opts.output_file << ": " << std::strerror(errno)
              << '\n';
    return false;
}

// Descriptors 0, 1 and 2 that the caller left closed get /dev/null.
// Otherwise the next descriptor opened (a socket, an eventfd) would take
// the number, and the report or an error message would be written into it:
// to the peer, or refused. Returns whether standard output was closed, which
// main refuses unless the report goes to --output; nothing when /dev/null
// cannot be opened.
std::optional<bool> open_closed_standard_descriptors() {
    bool output_was_closed = false;
    for (int fd = 0; fd <= 2; ++fd) {
        if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF)
            continue;
        output_was_closed = output_was_closed || fd == STDOUT_FILENO;
        // open returns the lowest free number, which is fd: every lower one
        // is open by now.
        if (::open("/dev/null", O_RDWR) != fd)
            return std::nullopt;
    }
    return output_was_closed;
}

// A report that did not reach its destination fails the run
// (write_failure.hpp): 0, or exit_failure with the reason on stderr.
int exit_status_of(const coriostream::write_failure& failure, const coriostream::options& opts) {
    if (failure.error() == 0)
        return 0;
    std::cerr << "coriostream: " << failure.message(coriostream::report_destination(opts)) << '\n';
    return exit_failure;
}

int print_plan(const coriostream::options& opts) {
    std::ofstream file;
    if (!open_output(opts, file))
        return exit_usage;
    std::ostream& out = opts.output_file ? file : std::cout;
    coriostream::report_writer writer(out, opts.format, coriostream::describe_run(opts));
    writer.write_plan(coriostream::make_test_plan(opts));
    return exit_status_of(writer.failure(), opts);
}

int run_transfers(const coriostream::options& opts) {
    std::ofstream file;
    if (!open_output(opts, file))
        return exit_failure;
    std::ostream& out = opts.output_file ? file : std::cout;
    try {
        // Probing for a device costs a device scan: only auto needs it.
        const bool rdma_available =
            coriostream::effective_transport(opts) == coriostream::transport_choice::automatic &&
            corio::rdma_available();
        const auto settings = coriostream::settle_run_settings(opts, rdma_available, std::cerr);
        auto metadata = coriostream::describe_run(opts);
        metadata.transport = std::string(corio::to_string(settings.transport));
        metadata.data_path = std::string(coriostream::to_string(settings.data_path));
        metadata.notify = std::string(coriostream::to_string(settings.notify));
        coriostream::report_writer writer(out, opts.format, metadata);
        coriostream::runner runner(opts, settings, writer);
        runner.run();
        writer.failure().throw_if_failed(coriostream::report_destination(opts));
    } catch (const std::exception& error) {
        // run_error carries a finished one-line message; anything else
        // (memory, a thread that cannot start) is printed as it comes.
        out.flush();
        std::cerr << "coriostream: " << error.what() << '\n';
        return exit_failure;
    }
    return 0;
}

int run_datagram(const coriostream::options& opts) {
    std::ofstream file;
    if (!open_output(opts, file))
        return exit_failure;
    std::ostream& out = opts.output_file ? file : std::cout;
    try {
        coriostream::run_datagram(opts, out);
    } catch (const std::exception& error) {
        out.flush();
        std::cerr << "coriostream: " << error.what() << '\n';
        return exit_failure;
    }
    return 0;
}

} // namespace

int main(int argc, char* argv[]) {
    const auto output_was_closed = open_closed_standard_descriptors();
    if (!output_was_closed)
        return exit_failure; // with no /dev/null, stderr may be closed too: no word
    const char* const program_name = argc > 0 ? argv[0] : "coriostream";
    coriostream::options opts;
    try {
        opts = coriostream::parse_options(argc, argv);
        if (*output_was_closed && !opts.output_file) {
            std::cerr << "coriostream: standard output is closed; give --output FILE for the "
                         "report\n";
            return exit_failure;
        }
        if (opts.help) {
            coriostream::print_usage(std::cout, program_name);
            coriostream::write_failure failure;
            failure.flush(std::cout);
            return exit_status_of(failure, opts);
        }
        coriostream::validate(opts);
    } catch (const coriostream::usage_error& error) {
        std::cerr << "coriostream: " << error.what() << '\n';
        coriostream::print_usage(std::cerr, program_name);
        return exit_usage;
    }

    if (opts.datagram)
        return run_datagram(opts);
    if (opts.dry_run)
        return print_plan(opts);
    return run_transfers(opts);
}
