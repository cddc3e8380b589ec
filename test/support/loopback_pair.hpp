#pragma once

#include <utility>

#include <sys/socket.h>

#include <corio/detail/unique_socket.hpp>

namespace corio::test {

/// Two connected kernel TCP sockets over the loopback interface of `family`
/// (AF_INET: 127.0.0.1, AF_INET6: ::1), blocking. Throws
/// boost::system::system_error when the host cannot make one.
std::pair<detail::unique_socket, detail::unique_socket> make_tcp_loopback_pair(int family = AF_INET);

} // namespace corio::test
