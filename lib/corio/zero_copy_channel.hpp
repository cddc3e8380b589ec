#pragma once

#include <boost/asio/any_io_executor.hpp>

#include <corio/basic_zero_copy_receiver.hpp>
#include <corio/basic_zero_copy_sender.hpp>
#include <corio/zero_copy_message.hpp>
#include <corio/zero_copy_options.hpp>

// corio's zero-copy channel: riowrite-then-notify over one stream, with
// credit-based flow control (doc/zero-copy-channel.md). One end is a
// zero_copy_sender, the other a zero_copy_receiver.

namespace corio {

/// A channel's sending end on any executor.
using zero_copy_sender = basic_zero_copy_sender<boost::asio::any_io_executor>;

/// A channel's receiving end on any executor.
using zero_copy_receiver = basic_zero_copy_receiver<boost::asio::any_io_executor>;

} // namespace corio
