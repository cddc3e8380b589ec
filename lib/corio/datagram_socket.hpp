#pragma once

#include <boost/asio/any_io_executor.hpp>

#include <corio/basic_datagram_socket.hpp>

namespace corio {

/// A datagram socket on any executor.
using datagram_socket = basic_datagram_socket<boost::asio::any_io_executor>;

} // namespace corio
