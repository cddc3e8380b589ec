#include "corio/detail/rdma_cm_lookup.hpp"
#include "corio/detail/rdma_cm_lookup_service.hpp"

#include <cerrno>
#include <cstring>
#include <memory>

#include <netdb.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <sys/socket.h>

#include <boost/asio/error.hpp>

#include <corio/error.hpp>
#include <corio/resolver.hpp>

namespace corio::detail {

boost::asio::execution_context::id rdma_cm_lookup_service::id;

namespace {

using boost::asio::ip::tcp;

// getaddrinfo's codes as Asio's resolver reports them, so that callers of
// either resolve_method compare against the same boost::asio::error values.
boost::system::error_code addrinfo_error(int code) {
    switch (code) {
    case EAI_AGAIN:
        return boost::asio::error::host_not_found_try_again;
    case EAI_BADFLAGS:
        return boost::asio::error::invalid_argument;
    case EAI_FAIL:
        return boost::asio::error::no_recovery;
    case EAI_FAMILY:
        return boost::asio::error::address_family_not_supported;
    case EAI_MEMORY:
        return boost::asio::error::no_memory;
    case EAI_NONAME:
#ifdef EAI_ADDRFAMILY
    case EAI_ADDRFAMILY:
#endif
#ifdef EAI_NODATA
    case EAI_NODATA:
#endif
        return boost::asio::error::host_not_found;
    case EAI_SERVICE:
        return boost::asio::error::service_not_found;
    case EAI_SOCKTYPE:
        return boost::asio::error::socket_type_not_supported;
    default:
        return {errno, boost::system::system_category()};
    }
}

struct addrinfo_deleter {
    void operator()(rdma_addrinfo* info) const { rdma_freeaddrinfo(info); }
};

bool endpoint_of(const sockaddr* address, socklen_t length, tcp::endpoint& out) {
    if (address == nullptr)
        return false;
    if (address->sa_family == AF_INET && length >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
        out.resize(sizeof(sockaddr_in));
        std::memcpy(out.data(), address, sizeof(sockaddr_in));
        return true;
    }
    if (address->sa_family == AF_INET6 &&
        length >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
        out.resize(sizeof(sockaddr_in6));
        std::memcpy(out.data(), address, sizeof(sockaddr_in6));
        return true;
    }
    return false;
}

} // namespace

std::vector<tcp::endpoint> rdma_cm_lookup(const std::string& host, const std::string& service,
                                          address_format format, bool passive,
                                          boost::system::error_code& ec) {
    ec.clear();
    rdma_addrinfo hints{};
    hints.ai_port_space = RDMA_PS_TCP;
    if (passive)
        hints.ai_flags |= RAI_PASSIVE;
    switch (format) {
    case address_format::name:
        break;
    case address_format::ip:
        hints.ai_flags |= RAI_NUMERICHOST;
        hints.ai_family = AF_INET;
        break;
    case address_format::ipv6:
        hints.ai_flags |= RAI_NUMERICHOST;
        hints.ai_family = AF_INET6;
        break;
    case address_format::gid:
        // As riostream: RAI_FAMILY makes librdmacm turn the GID, which
        // getaddrinfo reads as an IPv6 address, into an AF_IB one.
        hints.ai_flags |= RAI_NUMERICHOST | RAI_FAMILY;
        hints.ai_family = AF_IB;
        break;
    default:
        ec = boost::asio::error::invalid_argument;
        return {};
    }

    rdma_addrinfo* found = nullptr;
    errno = 0;
    const int status = rdma_getaddrinfo(host.empty() ? nullptr : host.c_str(),
                                        service.empty() ? nullptr : service.c_str(), &hints,
                                        &found);
    // librdmacm returns -1 with errno for its own failures (ENODEV before
    // any lookup when there is no RDMA device) and getaddrinfo's code as it
    // is for a failed lookup. glibc's EAI_BADFLAGS is -1 too: errno, cleared
    // above, tells the two apart (the hints here never have bad flags).
    if (status == -1 && errno != 0) {
        ec.assign(errno, boost::system::system_category());
        return {};
    }
    if (status != 0) {
        ec = addrinfo_error(status);
        return {};
    }
    const std::unique_ptr<rdma_addrinfo, addrinfo_deleter> owner(found);

    std::vector<tcp::endpoint> endpoints;
    bool infiniband = false;
    for (const rdma_addrinfo* info = found; info != nullptr; info = info->ai_next) {
        if (info->ai_family == AF_IB) {
            infiniband = true;
            continue;
        }
        tcp::endpoint endpoint;
        const bool usable = passive ? endpoint_of(info->ai_src_addr, info->ai_src_len, endpoint)
                                    : endpoint_of(info->ai_dst_addr, info->ai_dst_len, endpoint);
        if (usable)
            endpoints.push_back(endpoint);
    }
    if (endpoints.empty()) {
        if (infiniband)
            ec = make_error_code(error::ib_address_unsupported);
        else
            ec = boost::asio::error::host_not_found;
    }
    return endpoints;
}

} // namespace corio::detail
