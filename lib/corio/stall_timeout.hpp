#pragma once

#include <chrono>
#include <concepts>

#include <boost/system/error_code.hpp>

namespace corio {

class rpoll_service;

namespace detail {
class socket_impl;
}

/// A stream option of corio's own, kept by the stream rather than by its
/// socket: the longest a stream's reads, writes and iowrites may stay pending
/// with no byte moving on the stream's socket. Off (zero) by default.
///
/// Set to T on a connected stream (`stream.set_option(corio::stall_timeout(5s))`),
/// it ends a stream whose peer is gone: when a read, write or iowrite has been
/// pending for T and no byte has moved on the socket, in either direction,
/// for T, that operation and every other pending one of the stream end with
/// boost::asio::error::timed_out, and every later read, write or iowrite
/// fails at once with the same error until the stream is closed, as after a
/// reset. Bytes a call has already moved are reported, never dropped. The
/// clock runs from the last byte moved or from the moment the stream began to
/// wait after having nothing pending, whichever is later; it is checked by a
/// thread of the stream's rpoll_service, so an operation ends between T and T
/// plus a few milliseconds after its last progress (the figures measured are
/// in doc/testing.md, "Two hosts").
///
/// Why corio needs it: under Soft-RoCE (rxe, Linux 6.1) a queue pair whose
/// peer host is gone retries for ever, since rsockets connect with a retry
/// count of 7, which rxe reads as "infinite", and keep-alive probes are
/// retried the same way (doc/architecture.md, "Stall timeout"); over TCP a
/// peer that stops reading leaves a write pending for ever. A pending read
/// also counts: on a stream that may rightly stay silent for longer than T,
/// choose T above that silence, or leave no read pending.
///
/// The zero-copy channel runs on its stream: set the option on
/// `next_layer()` of the sender and of the receiver.
///
/// Blocking read_some and write_some are not watched. A connect or an accept
/// is not either: the option needs a connected stream
/// (boost::asio::error::not_connected otherwise) and belongs to that
/// connection: a stream closed and connected again starts with it off.
/// A negative timeout is boost::asio::error::invalid_argument.
///
/// When off, a transfer pays one load and one predictable branch: its
/// stream's watch pointer, null until the option is first set (not
/// benchmarked separately).
class stall_timeout {
public:
    /// False: streams of both transports take it (kept by the stream, not by its descriptor).
    static constexpr bool rdma_only = false;

    /// `timeout` of zero: off. Default-constructed to be filled in by get_option.
    explicit stall_timeout(std::chrono::milliseconds timeout = {}) noexcept : timeout_(timeout) {}
    /// The timeout to set, or the one get_option read back; zero: off.
    std::chrono::milliseconds value() const noexcept { return timeout_; }

    /// Sets it on `impl`, a stream of `service`.
    boost::system::error_code apply(rpoll_service& service, detail::socket_impl& impl) const;
    /// Reads it from `impl`.
    boost::system::error_code query(const detail::socket_impl& impl);

private:
    std::chrono::milliseconds timeout_;
};

/// An option that a stream keeps itself (stall_timeout) rather than its socket.
template <class T>
concept stream_option = requires(T& option, const T& const_option, rpoll_service& service,
                                 detail::socket_impl& impl) {
    { const_option.apply(service, impl) } -> std::same_as<boost::system::error_code>;
    { option.query(impl) } -> std::same_as<boost::system::error_code>;
};

} // namespace corio
