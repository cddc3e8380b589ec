#pragma once

#include <ostream>
#include <string>
#include <string_view>

namespace coriostream {

/// The first failure to write a report. riostream's printf loses its table
/// to a full disk or a closed descriptor and still exits 0; coriostream's
/// writers flush through this after every row, so that such a run ends
/// with an error naming the reason instead. The run itself goes on, since
/// its peer expects the whole series.
class write_failure {
public:
    /// Flushes `out`; if that fails and nothing failed before, keeps the
    /// failure's errno (EIO when the library left none).
    void flush(std::ostream& out);

    /// 0, or the errno of the first flush that failed.
    int error() const noexcept { return error_; }

    /// "cannot write DESTINATION: reason", for a failure that happened.
    std::string message(std::string_view destination) const;

    /// Throws run_error with message(destination) if a flush failed.
    void throw_if_failed(std::string_view destination) const;

private:
    int error_ = 0;
};

} // namespace coriostream
