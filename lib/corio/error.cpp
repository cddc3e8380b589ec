#include "corio/error.hpp"

#include <cerrno>

namespace corio {

namespace {

class corio_error_category final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "corio"; }

    std::string message(int value) const override {
        switch (static_cast<error>(value)) {
        case error::no_rdma_device:
            return "No RDMA device is available";
        case error::no_remote_mapping:
            return "No peer mapping covers the iowrite offset";
        case error::iowrite_out_of_bounds:
            return "The iowrite runs past the end of the peer mapping";
        case error::option_after_connect:
            return "RDMA options must be set before connect or listen";
        case error::not_supported_by_transport:
            return "The operation is not supported by this transport";
        case error::protocol_error:
            return "The peer violated the corio protocol";
        case error::protocol_version_mismatch:
            return "The peer speaks another version of the corio protocol";
        case error::stream_write_unfinished:
            return "An iowrite cannot start while a stream write is only partly sent";
        case error::rsocket_service_full:
            return "librdmacm's connection service has no room for another rsocket";
        case error::rsocket_listen_service_full:
            return "librdmacm's listen service has no room for another listening rsocket";
        case error::rsocket_datagram_unaddressable:
            return "rdma-core's datagram rsockets cannot address this RDMA port (RoCE)";
        case error::pinned_memory_budget_exhausted:
            return "The registration would pass corio's pinned-memory budget";
        case error::memlock_limit_exceeded:
            return "The registration would pass the locked-memory limit (RLIMIT_MEMLOCK, ulimit -l)";
        case error::ib_address_unsupported:
            return "InfiniBand (AF_IB) addresses are not supported: corio connects to IP addresses";
        case error::rsocket_cm_capacity_invalid:
            return "CORIO_RSOCKET_CM_CAPACITY is not a whole number from 1 to 65535";
        case error::rsocket_listen_capacity_invalid:
            return "CORIO_RSOCKET_LISTEN_CAPACITY is not a whole number from 1 to 65535";
        case error::iomap_slots_exhausted:
            return "No iomap slot is free for a writable mapping: on rsockets the peer's "
                   "iomap_size (RDMA_IOMAPSIZE) bounds them, and a peer that set none has none";
        }
        return "Unknown corio error";
    }

    boost::system::error_condition default_error_condition(int value) const noexcept override {
        if (static_cast<error>(value) == error::no_rdma_device)
            return make_error_condition(condition::no_rdma_device);
        return {value, *this};
    }
};

class corio_condition_category final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "corio.condition"; }

    std::string message(int value) const override {
        switch (static_cast<condition>(value)) {
        case condition::no_rdma_device:
            return "No RDMA device is available";
        }
        return "Unknown corio condition";
    }

    // librdmacm reports a missing device as plain ENODEV; matching it here lets
    // callers test `ec == corio::condition::no_rdma_device` whatever produced ec.
    bool equivalent(const boost::system::error_code& code, int value) const noexcept override {
        if (static_cast<condition>(value) != condition::no_rdma_device)
            return false;
        if (code.category() == corio::error_category())
            return code.value() == static_cast<int>(error::no_rdma_device);
        return (code.category() == boost::system::system_category() ||
                code.category() == boost::system::generic_category()) &&
               code.value() == ENODEV;
    }
};

} // namespace

const boost::system::error_category& error_category() noexcept {
    static const corio_error_category category;
    return category;
}

const boost::system::error_category& condition_category() noexcept {
    static const corio_condition_category category;
    return category;
}

} // namespace corio
