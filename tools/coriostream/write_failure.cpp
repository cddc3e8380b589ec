#include "write_failure.hpp"

#include <cerrno>
#include <cstring>

#include "run_error.hpp"

namespace coriostream {

void write_failure::flush(std::ostream& out) {
    // errno is read only right after the flush that failed: any later call
    // (an rsocket's, the reactor's) may overwrite it.
    errno = 0;
    out.flush();
    if (!out && error_ == 0)
        error_ = errno != 0 ? errno : EIO;
}

std::string write_failure::message(std::string_view destination) const {
    return "cannot write " + std::string(destination) + ": " + std::strerror(error_);
}

void write_failure::throw_if_failed(std::string_view destination) const {
    if (error_ != 0)
        throw run_error(message(destination));
}

} // namespace coriostream
