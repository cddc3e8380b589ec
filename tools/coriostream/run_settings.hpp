#pragma once

#include <chrono>
#include <iosfwd>

#include <corio/poll_mode.hpp>
#include <corio/resolver.hpp>
#include <corio/transport.hpp>

#include "options.hpp"
#include "thread_sharing.hpp"

namespace coriostream {

/// What a run uses once the choices the command line leaves open are made.
struct run_settings {
    /// rsocket or tcp, never automatic.
    corio::transport transport = corio::transport::tcp;
    data_path_kind data_path = data_path_kind::iomap;
    notify_method notify = notify_method::marker;
    corio::poll_mode polling = corio::poll_mode::thread;
    /// rpoll_service::set_spin_budget: zero but for --poll-mode adaptive.
    std::chrono::nanoseconds spin_budget{0};
    corio::address_format host_format = corio::address_format::name;
    /// getaddrinfo, or rdma_getaddrinfo for -T r and -f gid.
    corio::resolve_method lookup = corio::resolve_method::getaddrinfo;
    /// What shares a stream's threads, from --streams, --loopback and
    /// --threads.
    thread_sharing sharing = thread_sharing::stream_alone;
};

/// Settles the transport (--transport auto takes rsockets when
/// `rdma_available`), the data path, the notification, the poll mode and
/// what shares a stream's threads for validated options. The iomap path runs
/// on tcp through corio's emulation of riomap and riowrite, which needs
/// coriostream at both ends and the notify message (over tcp an iowrite
/// lands only during a receive, so no marker could be seen); without
/// --data-path, tcp under -T s (rstream's kernel-socket mode, whose peer may
/// be rstream) takes the stream path. Where auto falls back to tcp, or the
/// iomap path runs emulated, it writes one line saying so to `notices`.
/// Throws run_error for what cannot run:
/// --notify marker on tcp, -f gid where no RDMA device makes rsockets the
/// transport, and a -k beyond Linux's TCP_KEEPIDLE limit.
run_settings settle_run_settings(const options& opts, bool rdma_available, std::ostream& notices);

} // namespace coriostream
