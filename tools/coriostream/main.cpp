#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <ostream>

#include "options.hpp"
#include "report.hpp"
#include "test_plan.hpp"

namespace {

constexpr int exit_usage = 1;
// Distinct from a usage error, so scripts can tell "bad command line" from
// "this build cannot run transfers yet".
constexpr int exit_not_implemented = 2;

int print_plan(const coriostream::options& opts) {
    std::ofstream file;
    if (opts.output_file) {
        file.open(*opts.output_file);
        if (!file) {
            std::cerr << "coriostream: cannot write " << *opts.output_file << ": "
                      << std::strerror(errno) << '\n';
            return exit_usage;
        }
    }
    std::ostream& out = opts.output_file ? file : std::cout;
    coriostream::report_writer writer(out, opts.format, coriostream::describe_run(opts));
    writer.write_plan(coriostream::make_test_plan(opts));
    return 0;
}

} // namespace

int main(int argc, char* argv[]) {
    const char* const program_name = argc > 0 ? argv[0] : "coriostream";
    coriostream::options opts;
    try {
        opts = coriostream::parse_options(argc, argv);
        if (opts.help) {
            coriostream::print_usage(std::cout, program_name);
            return 0;
        }
        coriostream::validate(opts);
    } catch (const coriostream::usage_error& error) {
        std::cerr << "coriostream: " << error.what() << '\n';
        coriostream::print_usage(std::cerr, program_name);
        return exit_usage;
    }

    if (opts.dry_run)
        return print_plan(opts);
    std::cerr << "coriostream: transfers not implemented yet\n";
    return exit_not_implemented;
}
