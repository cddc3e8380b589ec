#define BOOST_TEST_MODULE write_failure
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <ostream>
#include <sstream>
#include <streambuf>
#include <string>

#include <coriostream/report.hpp>
#include <coriostream/run_error.hpp>
#include <coriostream/write_failure.hpp>

using coriostream::write_failure;

namespace {

// A stream buffer that takes characters until sync, which fails as a full
// disk's write does, with `error` in errno.
class failing_buffer : public std::streambuf {
public:
    explicit failing_buffer(int first_error) : error(first_error) {}
    int error;
    int syncs = 0;

protected:
    int_type overflow(int_type ch) override { return traits_type::not_eof(ch); }
    int sync() override {
        ++syncs;
        errno = error;
        return -1;
    }
};

} // namespace

BOOST_AUTO_TEST_CASE(a_stream_that_takes_everything_is_no_failure) {
    std::ostringstream out;
    write_failure failure;
    out << "row\n";
    failure.flush(out);
    BOOST_TEST(failure.error() == 0);
    BOOST_CHECK_NO_THROW(failure.throw_if_failed("standard output"));
}

BOOST_AUTO_TEST_CASE(a_failed_flush_keeps_its_errno_and_names_the_destination) {
    failing_buffer buffer(ENOSPC);
    std::ostream out(&buffer);
    write_failure failure;
    out << "row\n";
    failure.flush(out);
    BOOST_TEST(failure.error() == ENOSPC);
    BOOST_TEST(failure.message("/dev/full") == "cannot write /dev/full: No space left on device");
    BOOST_CHECK_THROW(failure.throw_if_failed("/dev/full"), coriostream::run_error);
}

BOOST_AUTO_TEST_CASE(the_first_failure_is_the_one_kept) {
    failing_buffer buffer(ENOSPC);
    std::ostream out(&buffer);
    write_failure failure;
    failure.flush(out);
    // A later flush that fails for another reason does not replace it.
    buffer.error = EBADF;
    out.clear();
    failure.flush(out);
    BOOST_TEST(buffer.syncs == 2);
    BOOST_TEST(failure.error() == ENOSPC);
}

BOOST_AUTO_TEST_CASE(a_stream_already_bad_without_errno_is_an_io_error) {
    std::ostringstream out;
    out.setstate(std::ios::badbit);
    write_failure failure;
    failure.flush(out);
    BOOST_TEST(failure.error() == EIO);
}

BOOST_AUTO_TEST_CASE(the_report_writer_keeps_the_failure_of_its_flush) {
    failing_buffer buffer(EIO);
    std::ostream out(&buffer);
    coriostream::report_writer writer(out, coriostream::output_format::table, {});
    writer.write_header();
    BOOST_TEST(buffer.syncs == 1);
    BOOST_TEST(writer.failure().error() == EIO);
}
