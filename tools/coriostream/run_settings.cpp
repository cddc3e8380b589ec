#include "run_settings.hpp"

#include <ostream>
#include <string>

#include <corio/socket_base.hpp>

#include "run_error.hpp"

namespace coriostream {

namespace {

corio::address_format corio_format(address_format format) {
    switch (format) {
    case address_format::ip:
        return corio::address_format::ip;
    case address_format::ipv6:
        return corio::address_format::ipv6;
    case address_format::gid:
        return corio::address_format::gid;
    case address_format::name:
        break;
    }
    return corio::address_format::name;
}

} // namespace

run_settings settle_run_settings(const options& opts, bool rdma_available, std::ostream& notices) {
    if (opts.host_format == address_format::gid)
        throw run_error("-f gid is not supported yet (it needs rdma_getaddrinfo)");
    if (opts.rdma_cm_resolve)
        throw run_error("-T r is not supported yet (it needs rdma_getaddrinfo)");

    if (opts.keepalive_seconds > static_cast<std::size_t>(
                                     corio::socket_base::keep_alive::max_idle.count()))
        throw run_error("-k above " +
                        std::to_string(corio::socket_base::keep_alive::max_idle.count()) +
                        " s is not supported (Linux's limit for TCP_KEEPIDLE)");

    run_settings settings;
    settings.host_format = corio_format(opts.host_format);
    // riostream's -T b and -T n choose whether its calls sleep or spin, and
    // -T a only adds an rpoll before each call with the same choice (timeout
    // -1 when blocking, else 0). corio's calls never block and always wait
    // through the io_context, so the letters choose how that waits: -T b the
    // poller thread, which sleeps in rpoll, and the default or -T n busy
    // polling, which spins. --poll-mode, the explicit form, wins
    // (doc/riostream-compatibility.md).
    const poll_mode polling = opts.polling.value_or(
        opts.mode == socket_mode::blocking ? poll_mode::thread : poll_mode::busy);
    settings.polling =
        polling == poll_mode::busy ? corio::poll_mode::busy : corio::poll_mode::thread;
    settings.data_path = opts.data_path;

    switch (effective_transport(opts)) {
    case transport_choice::rsocket:
        settings.transport = corio::transport::rsocket;
        break;
    case transport_choice::tcp:
        settings.transport = corio::transport::tcp;
        if (settings.data_path == data_path_kind::iomap)
            throw run_error("--data-path iomap needs rsockets; use --data-path stream on tcp");
        break;
    case transport_choice::automatic:
        if (rdma_available) {
            settings.transport = corio::transport::rsocket;
            break;
        }
        settings.transport = corio::transport::tcp;
        if (settings.data_path == data_path_kind::iomap) {
            // Falls back rather than fails, so that a plain
            // `coriostream --loopback` measures something on any host.
            settings.data_path = data_path_kind::stream;
            notices << "coriostream: no RDMA device; using --transport tcp and --data-path stream\n";
        } else {
            notices << "coriostream: no RDMA device; using --transport tcp\n";
        }
        break;
    }
    return settings;
}

} // namespace coriostream
