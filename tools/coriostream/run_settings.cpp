#include "run_settings.hpp"

#include <ostream>
#include <string>

#include <corio/rpoll_service.hpp>
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

    if (opts.keepalive_seconds > static_cast<std::size_t>(
                                     corio::socket_base::keep_alive::max_idle.count()))
        throw run_error("-k above " +
                        std::to_string(corio::socket_base::keep_alive::max_idle.count()) +
                        " s is not supported (Linux's limit for TCP_KEEPIDLE)");

    run_settings settings;
    settings.host_format = corio_format(opts.host_format);
    // -T r, and -f gid (which sets it too, as in riostream and rstream).
    settings.lookup = opts.rdma_cm_resolve ? corio::resolve_method::rdma_getaddrinfo
                                           : corio::resolve_method::getaddrinfo;
    // riostream's -T b and -T n choose whether its calls sleep or spin, and
    // -T a only adds an rpoll before each call with the same choice (timeout
    // -1 when blocking, else 0). corio's calls never block and always wait
    // through the io_context, so the letters choose how that waits: -T b the
    // poller thread, which sleeps in rpoll, and the default or -T n busy
    // polling, which spins. --poll-mode, the explicit form, wins
    // (doc/riostream-compatibility.md).
    // --poll-mode adaptive is the poller thread with corio's spin budget
    // before each wait; riostream has no letter for it.
    const poll_mode polling = opts.polling.value_or(
        opts.mode == socket_mode::blocking ? poll_mode::thread : poll_mode::busy);
    settings.polling =
        polling == poll_mode::busy ? corio::poll_mode::busy : corio::poll_mode::thread;
    if (opts.spin_budget && polling != poll_mode::adaptive)
        throw run_error("--spin-budget needs --poll-mode adaptive: only the adaptive wait spins "
                        "before it sleeps");
    if (polling == poll_mode::adaptive)
        settings.spin_budget = opts.spin_budget.value_or(
            std::chrono::duration_cast<std::chrono::microseconds>(
                corio::rpoll_service::default_spin_budget));
    const bool tcp_asked = effective_transport(opts) == transport_choice::tcp;
    const bool fell_back = effective_transport(opts) == transport_choice::automatic && !rdma_available;
    settings.transport = tcp_asked || fell_back ? corio::transport::tcp : corio::transport::rsocket;
    // -T s is rstream's kernel-socket mode: its peer may be rstream, which
    // speaks only the stream path's protocol.
    settings.data_path = opts.data_path.value_or(
        opts.kernel_sockets && !opts.loopback ? data_path_kind::stream : data_path_kind::iomap);
    settings.notify = opts.notify.value_or(notify_method::marker);
    const bool emulated_iomap =
        settings.transport == corio::transport::tcp && settings.data_path == data_path_kind::iomap;
    if (emulated_iomap) {
        if (opts.notify == notify_method::marker)
            throw run_error("--notify marker needs rsockets: over tcp an iowrite lands only "
                            "during a receive, so use --notify message or --data-path stream");
        settings.notify = notify_method::message;
    }

    // --loopback's server halves run on the clients' io_context: with
    // fewer threads than halves, some take turns with their peers.
    if (opts.loopback && opts.threads < 2 * opts.streams)
        settings.sharing = thread_sharing::peer_on_these_threads;
    else if (opts.loopback || opts.streams > 1)
        settings.sharing = thread_sharing::other_streams;

    if (opts.host_format == address_format::gid && settings.transport == corio::transport::tcp)
        throw run_error("-f gid needs rsockets; kernel TCP has no AF_IB (no RDMA device here)");

    // One line, first, for every choice the command line did not make, so
    // that a run says what it measured.
    const std::string emulation =
        "--data-path iomap through corio's emulation of riomap and riowrite, with "
        "--notify message (the peer must be coriostream)";
    if (fell_back)
        notices << "coriostream: no RDMA device; using --transport tcp"
                << (emulated_iomap ? " and " + emulation : std::string()) << '\n';
    else if (emulated_iomap)
        notices << "coriostream: on tcp, " << emulation << '\n';
    return settings;
}

} // namespace coriostream
