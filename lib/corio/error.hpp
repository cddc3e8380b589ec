#pragma once

#include <string>
#include <system_error>

#include <boost/system/error_code.hpp>

namespace corio {

/// Errors that errno cannot express. Everything errno can say stays in
/// boost::system::system_category, so callers compare against the usual
/// boost::asio::error values.
enum class error {
    /// rsocket found no RDMA device (librdmacm reports ENODEV).
    no_rdma_device = 1,
    /// riowrite found no mapping of the peer's covering the offset. rdma-core
    /// signals this by returning 0 without setting errno.
    no_remote_mapping,
    /// An iowrite would run past the end of the peer mapping it targets.
    /// rdma-core v44 loops forever on such a write, so it is refused first.
    iowrite_out_of_bounds,
    /// An RDMA-only option was set after connect or listen, when rsockets
    /// no longer apply it.
    option_after_connect,
    /// The operation needs the other transport (for example an RDMA option on
    /// a TCP stream that did not negotiate it).
    not_supported_by_transport,
    /// The peer sent data that breaks a corio protocol.
    protocol_error,
    /// The peer speaks a different version of a corio protocol.
    protocol_version_mismatch,
    /// TCP emulation of iowrite: an iowrite cannot start while a stream write
    /// has sent only part of its frame; the stream must finish that write
    /// first (a cancelled or short write_some leaves one open).
    stream_write_unfinished,
    /// librdmacm's connection service already watches as many rsockets as
    /// corio made room for. Before rdma-core v44.7 (Debian 12 ships v44.0)
    /// it corrupts memory beyond that room, so corio refuses the connect or
    /// accept instead (doc/architecture.md, CORIO_RSOCKET_CM_CAPACITY).
    rsocket_service_full,
    /// librdmacm's listen service already watches as many listening
    /// rsockets as corio made room for (CORIO_RSOCKET_LISTEN_CAPACITY, 64 by
    /// default); the same v44 bug as rsocket_service_full, so corio refuses
    /// the listen.
    rsocket_listen_service_full,
    /// rdma-core's datagram rsockets cannot address this RDMA port: v44
    /// gives each datagram socket an address handle without a GRH, which
    /// every RoCE port (Soft-RoCE included) refuses (doc/architecture.md).
    rsocket_datagram_unaddressable,
    /// A registration (iomap_registration, a zero-copy channel's region)
    /// would pass its execution context's corio::pinned_memory_budget.
    pinned_memory_budget_exhausted,
    /// A registration would pass the process's RLIMIT_MEMLOCK (checked
    /// before rdma-core is asked, which would say only ENOMEM);
    /// corio::memlock_diagnostic says by how much and how to raise it.
    memlock_limit_exceeded,
    /// rdma_getaddrinfo gave an InfiniBand address (AF_IB, from a GID),
    /// which no corio endpoint holds: corio's endpoints are IP endpoints.
    /// rsockets on RoCE, Soft-RoCE included, cannot bind one either (rbind
    /// fails with ENODEV; doc/architecture.md).
    ib_address_unsupported,
    /// CORIO_RSOCKET_CM_CAPACITY is set, but not to a whole number from 1
    /// to 65535: every rsocket connect and accept fails with this rather
    /// than prime a room the variable did not ask for (doc/architecture.md).
    rsocket_cm_capacity_invalid,
    /// The same for CORIO_RSOCKET_LISTEN_CAPACITY: every rsocket listen
    /// fails with this.
    rsocket_listen_capacity_invalid,
    /// A PROT_WRITE iomap_registration found no free slot. On rsockets the
    /// peer's iomap_size (RDMA_IOMAPSIZE) bounds this side's writable
    /// mappings, and a peer that set none (rstream, coriostream --data-path
    /// stream) offers none; rdma-core says ENOMEM, as it does for memory it
    /// cannot pin, but corio checks RLIMIT_MEMLOCK before it asks, so an
    /// ENOMEM past that check is this. On the tcp emulation this side's own
    /// iomap_size bounds them.
    iomap_slots_exhausted,
};

/// Portable conditions, matched by codes from several categories.
enum class condition {
    /// No RDMA device: matches corio::error::no_rdma_device and ENODEV.
    no_rdma_device = 1,
};

/// The category of corio::error codes, named "corio".
const boost::system::error_category& error_category() noexcept;
/// The category of corio::condition, which matches codes of several categories.
const boost::system::error_category& condition_category() noexcept;

/// Makes a boost::system::error_code of corio's category; lets a corio::error compare with and
/// convert to error_code.
inline boost::system::error_code make_error_code(error e) noexcept {
    return {static_cast<int>(e), error_category()};
}

/// Makes an error_condition of corio's condition category; lets error codes compare with a
/// corio::condition.
inline boost::system::error_condition make_error_condition(condition c) noexcept {
    return {static_cast<int>(c), condition_category()};
}

} // namespace corio

namespace boost::system {
template <> struct is_error_code_enum<corio::error> : std::true_type {};
template <> struct is_error_condition_enum<corio::condition> : std::true_type {};
} // namespace boost::system
