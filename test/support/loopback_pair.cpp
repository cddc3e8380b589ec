#include "loopback_pair.hpp"

#include <netinet/in.h>

#include <boost/system/system_error.hpp>

#include <corio/detail/posix_socket_ops.hpp>

namespace corio::test {

namespace {

void check(const boost::system::error_code& ec, const char* what) {
    if (ec)
        throw boost::system::system_error(ec, what);
}

detail::unique_socket open_tcp(int family) {
    boost::system::error_code ec;
    detail::unique_socket s(detail::posix_socket_ops.open(family, SOCK_STREAM, 0, ec),
                            detail::posix_socket_ops);
    check(ec, "socket");
    return s;
}

} // namespace

std::pair<detail::unique_socket, detail::unique_socket> make_tcp_loopback_pair(int family) {
    const auto& ops = detail::posix_socket_ops;
    sockaddr_storage address{};
    socklen_t length = 0;
    if (family == AF_INET6) {
        auto& in6 = reinterpret_cast<sockaddr_in6&>(address);
        in6.sin6_family = AF_INET6;
        in6.sin6_addr = in6addr_loopback;
        length = sizeof in6;
    } else {
        auto& in4 = reinterpret_cast<sockaddr_in&>(address);
        in4.sin_family = AF_INET;
        in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        length = sizeof in4;
    }
    auto* addr = reinterpret_cast<sockaddr*>(&address);

    auto listener = open_tcp(family);
    check(ops.bind(listener.get(), addr, length), "bind");
    check(ops.listen(listener.get(), 1), "listen");
    check(ops.getsockname(listener.get(), addr, &length), "getsockname");

    auto client = open_tcp(family);
    check(ops.connect(client.get(), addr, length), "connect");
    boost::system::error_code ec;
    detail::unique_socket server(ops.accept(listener.get(), nullptr, nullptr, ec), ops);
    check(ec, "accept");
    return {std::move(client), std::move(server)};
}

} // namespace corio::test
