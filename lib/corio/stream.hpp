#pragma once

#include <boost/asio/any_io_executor.hpp>

#include <corio/basic_stream.hpp>

namespace corio {

/// A stream on any executor.
using stream = basic_stream<boost::asio::any_io_executor>;

} // namespace corio
