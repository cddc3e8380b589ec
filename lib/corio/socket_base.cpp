#include "corio/socket_base.hpp"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <rdma/rsocket.h>
#include <sys/socket.h>

#include <boost/asio/error.hpp>

#include <corio/error.hpp>

// <rdma/rsocket.h> is here for its constants only: calls into rsockets go
// through the ops table, whose rsocket side is detail/rsocket_ops.cpp.

namespace corio {

namespace {

using boost::system::error_code;
using detail::socket_ops;

constexpr int sol_rdma = 0x10000;
constexpr int rdma_sqsize = 0;
constexpr int rdma_rqsize = 1;
constexpr int rdma_inline = 2;
constexpr int rdma_iomapsize = 3;
constexpr int rdma_route_option = 4;
static_assert(sol_rdma == SOL_RDMA);
static_assert(rdma_sqsize == RDMA_SQSIZE);
static_assert(rdma_rqsize == RDMA_RQSIZE);
static_assert(rdma_inline == RDMA_INLINE);
static_assert(rdma_iomapsize == RDMA_IOMAPSIZE);
static_assert(rdma_route_option == RDMA_ROUTE);

bool in_range(int value, int low, int high) noexcept { return value >= low && value <= high; }

error_code set_int(const socket_ops& ops, int fd, int level, int name, int value) {
    return ops.setsockopt(fd, level, name, &value, sizeof value);
}

error_code get_int(const socket_ops& ops, int fd, int level, int name, int& value) {
    int result = 0;
    socklen_t length = sizeof result;
    if (const auto ec = ops.getsockopt(fd, level, name, &result, &length))
        return ec;
    // Every option here is an int on both transports; anything else would be
    // a transport answering for another option.
    if (length != sizeof result)
        return boost::asio::error::invalid_argument;
    value = result;
    return {};
}

error_code get_bool(const socket_ops& ops, int fd, int level, int name, bool& value) {
    int result = 0;
    if (const auto ec = get_int(ops, fd, level, name, result))
        return ec;
    value = result != 0;
    return {};
}

// The kernel refuses the SOL_RDMA level with ENOPROTOOPT when setting and
// EOPNOTSUPP when getting; either means "this is not an rsocket". rsockets
// answer EINVAL for these four options only once the socket has started to
// connect or was accepted (rsocket.c, rsetsockopt: `rs->state >= rs_opening`;
// listening is below that), since corio has already refused every value they
// would reject.
error_code rdma_status(error_code ec, bool setting) {
    if (ec == boost::asio::error::no_protocol_option ||
        ec == boost::asio::error::operation_not_supported)
        return error::not_supported_by_transport;
    if (setting && ec == boost::asio::error::invalid_argument)
        return error::option_after_connect;
    return ec;
}

// rsockets read RDMA_SQSIZE, RDMA_RQSIZE and RDMA_INLINE as uint32_t (and
// RDMA_IOMAPSIZE as int); the value is validated non-negative, so handing the
// same four bytes as a uint32_t is exact.
error_code set_rdma_u32(const socket_ops& ops, int fd, int name, int value) {
    const auto v = static_cast<std::uint32_t>(value);
    return rdma_status(ops.setsockopt(fd, sol_rdma, name, &v, sizeof v), true);
}

error_code get_rdma(const socket_ops& ops, int fd, int name, int& value) {
    return rdma_status(get_int(ops, fd, sol_rdma, name, value), false);
}

} // namespace

error_code socket_base::send_buffer_size::apply(const socket_ops& ops, int fd) const {
    if (!in_range(value_, 1, max_value))
        return boost::asio::error::invalid_argument;
    return set_int(ops, fd, SOL_SOCKET, SO_SNDBUF, value_);
}

error_code socket_base::send_buffer_size::query(const socket_ops& ops, int fd) {
    return get_int(ops, fd, SOL_SOCKET, SO_SNDBUF, value_);
}

error_code socket_base::receive_buffer_size::apply(const socket_ops& ops, int fd) const {
    if (!in_range(value_, 1, max_value))
        return boost::asio::error::invalid_argument;
    return set_int(ops, fd, SOL_SOCKET, SO_RCVBUF, value_);
}

error_code socket_base::receive_buffer_size::query(const socket_ops& ops, int fd) {
    return get_int(ops, fd, SOL_SOCKET, SO_RCVBUF, value_);
}

error_code socket_base::no_delay::apply(const socket_ops& ops, int fd) const {
    return set_int(ops, fd, IPPROTO_TCP, TCP_NODELAY, value_ ? 1 : 0);
}

error_code socket_base::no_delay::query(const socket_ops& ops, int fd) {
    return get_bool(ops, fd, IPPROTO_TCP, TCP_NODELAY, value_);
}

error_code socket_base::reuse_address::apply(const socket_ops& ops, int fd) const {
    return set_int(ops, fd, SOL_SOCKET, SO_REUSEADDR, value_ ? 1 : 0);
}

error_code socket_base::reuse_address::query(const socket_ops& ops, int fd) {
    return get_bool(ops, fd, SOL_SOCKET, SO_REUSEADDR, value_);
}

error_code socket_base::keep_alive::apply(const socket_ops& ops, int fd) const {
    if (idle_ < std::chrono::seconds::zero() || idle_ > max_idle)
        return boost::asio::error::invalid_argument;
    if (idle_ > std::chrono::seconds::zero()) {
        if (const auto ec =
                set_int(ops, fd, IPPROTO_TCP, TCP_KEEPIDLE, static_cast<int>(idle_.count())))
            return ec;
    }
    return set_int(ops, fd, SOL_SOCKET, SO_KEEPALIVE, value_ ? 1 : 0);
}

error_code socket_base::keep_alive::query(const socket_ops& ops, int fd) {
    bool on = false;
    int idle = 0;
    if (const auto ec = get_bool(ops, fd, SOL_SOCKET, SO_KEEPALIVE, on))
        return ec;
    if (const auto ec = get_int(ops, fd, IPPROTO_TCP, TCP_KEEPIDLE, idle))
        return ec;
    value_ = on;
    idle_ = std::chrono::seconds(idle);
    return {};
}

error_code socket_base::linger::apply(const socket_ops& ops, int fd) const {
    if (!in_range(timeout_, 0, max_timeout))
        return boost::asio::error::invalid_argument;
    const ::linger value{enabled_ ? 1 : 0, timeout_};
    return ops.setsockopt(fd, SOL_SOCKET, SO_LINGER, &value, sizeof value);
}

error_code socket_base::linger::query(const socket_ops& ops, int fd) {
    ::linger value{};
    socklen_t length = sizeof value;
    if (const auto ec = ops.getsockopt(fd, SOL_SOCKET, SO_LINGER, &value, &length))
        return ec;
    if (length != sizeof value)
        return boost::asio::error::invalid_argument;
    enabled_ = value.l_onoff != 0;
    timeout_ = value.l_linger;
    return {};
}

error_code socket_base::oob_inline::apply(const socket_ops& ops, int fd) const {
    return set_int(ops, fd, SOL_SOCKET, SO_OOBINLINE, value_ ? 1 : 0);
}

error_code socket_base::oob_inline::query(const socket_ops& ops, int fd) {
    return get_bool(ops, fd, SOL_SOCKET, SO_OOBINLINE, value_);
}

error_code socket_base::max_segment::apply(const socket_ops& ops, int fd) const {
    if (!in_range(value_, min_value, max_value))
        return boost::asio::error::invalid_argument;
    return set_int(ops, fd, IPPROTO_TCP, TCP_MAXSEG, value_);
}

error_code socket_base::max_segment::query(const socket_ops& ops, int fd) {
    return get_int(ops, fd, IPPROTO_TCP, TCP_MAXSEG, value_);
}

error_code socket_base::v6_only::apply(const socket_ops& ops, int fd) const {
    return set_int(ops, fd, IPPROTO_IPV6, IPV6_V6ONLY, value_ ? 1 : 0);
}

error_code socket_base::v6_only::query(const socket_ops& ops, int fd) {
    return get_bool(ops, fd, IPPROTO_IPV6, IPV6_V6ONLY, value_);
}

template <int Name>
error_code socket_base::rdma_queue_option<Name>::apply(const socket_ops& ops, int fd) const {
    if (!in_range(value_, 0, max_value))
        return boost::asio::error::invalid_argument;
    return set_rdma_u32(ops, fd, Name, value_);
}

template <int Name>
error_code socket_base::rdma_queue_option<Name>::query(const socket_ops& ops, int fd) {
    return get_rdma(ops, fd, Name, value_);
}

static_assert(std::is_same_v<socket_base::sq_size, socket_base::rdma_queue_option<rdma_sqsize>>);
static_assert(std::is_same_v<socket_base::rq_size, socket_base::rdma_queue_option<rdma_rqsize>>);
static_assert(
    std::is_same_v<socket_base::inline_size, socket_base::rdma_queue_option<rdma_inline>>);
template class socket_base::rdma_queue_option<rdma_sqsize>;
template class socket_base::rdma_queue_option<rdma_rqsize>;
template class socket_base::rdma_queue_option<rdma_inline>;

error_code socket_base::iomap_size::apply(const socket_ops& ops, int fd) const {
    if (!in_range(value_, 0, max_value))
        return boost::asio::error::invalid_argument;
    // RDMA_IOMAPSIZE is the one RDMA option rsockets read as an int.
    return rdma_status(set_int(ops, fd, sol_rdma, rdma_iomapsize, value_), true);
}

error_code socket_base::iomap_size::query(const socket_ops& ops, int fd) {
    return get_rdma(ops, fd, rdma_iomapsize, value_);
}

socket_base::rdma_route::rdma_route(std::span<const ibv_path_data> paths) noexcept
    : count_(std::min(paths.size(), max_paths)), too_many_(paths.size() > max_paths) {
    std::copy_n(paths.begin(), count_, paths_.begin());
}

error_code socket_base::rdma_route::apply(const socket_ops& ops, int fd) const {
    // The record rdma_cm's kernel side looks for (ucma_set_ib_path).
    constexpr std::uint32_t wanted =
        IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY | IBV_PATH_FLAG_BIDIRECTIONAL;
    const auto records = paths();
    if (too_many_ || records.empty() ||
        std::none_of(records.begin(), records.end(),
                     [](const ibv_path_data& p) { return p.flags == wanted; }) ||
        std::any_of(records.begin(), records.end(),
                    [](const ibv_path_data& p) { return p.reserved != 0; }))
        return boost::asio::error::invalid_argument;
    return rdma_status(ops.setsockopt(fd, sol_rdma, rdma_route_option, records.data(),
                                      static_cast<socklen_t>(records.size_bytes())),
                       true);
}

error_code socket_base::rdma_route::query(const socket_ops& ops, int fd) {
    sockaddr_storage peer{};
    socklen_t peer_length = sizeof peer;
    // v44's getpeername succeeds on an unconnected rsocket with an empty
    // address, hence the family check.
    if (ops.getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_length) ||
        peer.ss_family == AF_UNSPEC)
        return boost::asio::error::not_connected;
    socklen_t length = sizeof paths_;
    if (const auto ec = rdma_status(ops.getsockopt(fd, sol_rdma, rdma_route_option,
                                                   paths_.data(), &length),
                                    false))
        return ec;
    if (length % sizeof(ibv_path_data) != 0)
        return boost::asio::error::invalid_argument;
    count_ = length / sizeof(ibv_path_data);
    too_many_ = false;
    return {};
}

} // namespace corio
