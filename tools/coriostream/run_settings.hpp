#pragma once

#include <iosfwd>

#include <corio/poll_mode.hpp>
#include <corio/resolver.hpp>
#include <corio/transport.hpp>

#include "options.hpp"

namespace coriostream {

/// What a run uses once the choices the command line leaves open are made.
struct run_settings {
    /// rsocket or tcp, never automatic.
    corio::transport transport = corio::transport::tcp;
    data_path_kind data_path = data_path_kind::iomap;
    corio::poll_mode polling = corio::poll_mode::thread;
    corio::address_format host_format = corio::address_format::name;
};

/// Settles the transport (--transport auto takes rsockets when
/// `rdma_available`), the data path and the poll mode for validated
/// options. Where auto falls back to tcp it writes one line saying so to
/// `notices`, and takes --data-path stream as well, since the iomap path
/// needs rsockets. Throws run_error for what this build cannot do: the
/// iomap path on tcp when tcp was asked for, -f gid or -T r, which need
/// rdma_getaddrinfo, and a -k beyond Linux's TCP_KEEPIDLE limit.
run_settings settle_run_settings(const options& opts, bool rdma_available, std::ostream& notices);

} // namespace coriostream
