#pragma once

#include <stdexcept>

namespace coriostream {

/// A run that cannot go on. The message is one line, ready to print after
/// "coriostream: "; main prints it and exits non-zero.
class run_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

} // namespace coriostream
