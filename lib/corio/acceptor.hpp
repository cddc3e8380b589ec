#pragma once

#include <boost/asio/any_io_executor.hpp>

#include <corio/basic_acceptor.hpp>

namespace corio {

/// An acceptor on any executor.
using acceptor = basic_acceptor<boost::asio::any_io_executor>;

} // namespace corio
