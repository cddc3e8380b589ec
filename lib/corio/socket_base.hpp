#pragma once

#include <array>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <limits>
#include <span>
#include <type_traits>

#include <infiniband/sa.h>

#include <boost/system/error_code.hpp>

#include <corio/detail/socket_ops.hpp>

namespace corio {

/// Typed socket options for corio's streams and acceptors, shaped like
/// boost::asio::socket_base's: construct one with a value and hand it to
/// set_option, or default-construct one and hand it to get_option.
///
/// Every option can also be used without an I/O object: `apply` sets it on a
/// descriptor through a transport's ops table, `query` reads it back. Both
/// validate first, so a value neither transport could hold is refused with
/// boost::asio::error::invalid_argument before any call is made.
///
/// @par Transports
/// rsockets (rdma-core v44, librdmacm/rsocket.c) accept every common option
/// here, with the differences each option notes. The four RDMA options
/// (`rdma_only == true`) exist only on rsockets: a kernel socket reports
/// corio::error::not_supported_by_transport for them, except iomap_size,
/// which it records (see there). rsockets size the queue
/// pair from them when a connection is made, so setting one fails with
/// corio::error::option_after_connect from connect on, and on an accepted
/// socket; a listening socket still takes them and passes them on to the
/// sockets it accepts. Querying works at any time.
struct socket_base {
    /// SO_SNDBUF. Both transports store twice the value, as Linux does, and
    /// report the doubled size; the kernel also clamps to net.core.wmem_max.
    /// Valid: 1 to max_value, so that the doubled size fits an int.
    /// rsockets: a value below 1024 (doubled, below their 2048-byte low
    /// water mark) stores 4096; once the connection's buffers exist, rsockets
    /// ignore a new size yet report success, so set it before connect, or on
    /// the listening socket, whose accepted sockets inherit it.
    class send_buffer_size {
    public:
        /// False: both transports take this option.
        static constexpr bool rdma_only = false;
        /// The largest value apply() accepts.
        static constexpr int max_value = std::numeric_limits<int>::max() / 2;

        /// An option holding `v`: to set, or default-constructed to be filled in by get_option.
        explicit send_buffer_size(int v = 0) noexcept : value_(v) {}
        /// The value to set, or the one get_option read back.
        int value() const noexcept { return value_; }

        /// Validates the value and sets it on descriptor `fd` through the transport's `ops`:
        /// boost::asio::error::invalid_argument for a value out of range, before any call; else the
        /// call's error, if any.
        boost::system::error_code apply(const detail::socket_ops& ops, int fd) const;
        /// Reads the option of descriptor `fd` through `ops` into this object.
        boost::system::error_code query(const detail::socket_ops& ops, int fd);

    private:
        int value_;
    };

    /// SO_RCVBUF, doubled and bounded like send_buffer_size (the kernel clamps
    /// to net.core.rmem_max). 0 is refused: the kernel raises it to its
    /// minimum, but rsockets would take it literally and size the
    /// connection's receive buffer at zero bytes.
    /// rsockets: ignored with success once the receive buffer exists, as for
    /// send_buffer_size.
    class receive_buffer_size {
    public:
        /// False: both transports take this option.
        static constexpr bool rdma_only = false;
        /// The largest value apply() accepts.
        static constexpr int max_value = std::numeric_limits<int>::max() / 2;

        /// An option holding `v`: to set, or default-constructed to be filled in by get_option.
        explicit receive_buffer_size(int v = 0) noexcept : value_(v) {}
        /// The value to set, or the one get_option read back.
        int value() const noexcept { return value_; }

        /// Validates the value and sets it on descriptor `fd` through the transport's `ops`:
        /// boost::asio::error::invalid_argument for a value out of range, before any call; else the
        /// call's error, if any.
        boost::system::error_code apply(const detail::socket_ops& ops, int fd) const;
        /// Reads the option of descriptor `fd` through `ops` into this object.
        boost::system::error_code query(const detail::socket_ops& ops, int fd);

    private:
        int value_;
    };

    /// TCP_NODELAY. rsockets have no Nagle algorithm and send at once either
    /// way; they only record the flag, so that it reads back as set.
    class no_delay {
    public:
        /// False: both transports take this option.
        static constexpr bool rdma_only = false;

        /// An option holding the flag `v`: to set, or default-constructed to be filled in by
        /// get_option.
        explicit no_delay(bool v = false) noexcept : value_(v) {}
        /// The value to set, or the one get_option read back.
        bool value() const noexcept { return value_; }
        /// The flag's value.
        explicit operator bool() const noexcept { return value_; }
        /// True when the flag is off.
        bool operator!() const noexcept { return !value_; }

        /// Validates the value and sets it on descriptor `fd` through the transport's `ops`:
        /// boost::asio::error::invalid_argument for a value out of range, before any call; else the
        /// call's error, if any.
        boost::system::error_code apply(const detail::socket_ops& ops, int fd) const;
        /// Reads the option of descriptor `fd` through `ops` into this object.
        boost::system::error_code query(const detail::socket_ops& ops, int fd);

    private:
        bool value_;
    };

    /// SO_REUSEADDR. rsockets pass it to the RDMA CM
    /// (RDMA_OPTION_ID_REUSEADDR); set it before bind.
    class reuse_address {
    public:
        /// False: both transports take this option.
        static constexpr bool rdma_only = false;

        /// An option holding the flag `v`: to set, or default-constructed to be filled in by
        /// get_option.
        explicit reuse_address(bool v = false) noexcept : value_(v) {}
        /// The value to set, or the one get_option read back.
        bool value() const noexcept { return value_; }
        /// The flag's value.
        explicit operator bool() const noexcept { return value_; }
        /// True when the flag is off.
        bool operator!() const noexcept { return !value_; }

        /// Validates the value and sets it on descriptor `fd` through the transport's `ops`:
        /// boost::asio::error::invalid_argument for a value out of range, before any call; else the
        /// call's error, if any.
        boost::system::error_code apply(const detail::socket_ops& ops, int fd) const;
        /// Reads the option of descriptor `fd` through `ops` into this object.
        boost::system::error_code query(const detail::socket_ops& ops, int fd);

    private:
        bool value_;
    };

    /// SO_KEEPALIVE, and with an idle time above zero also TCP_KEEPIDLE: the
    /// seconds a connection stays silent before the first probe. An idle time
    /// of zero leaves the socket's own (the kernel's default is
    /// net.ipv4.tcp_keepalive_time). Valid idle: 0 to max_idle, Linux's limit
    /// for TCP_KEEPIDLE, applied to both transports alike.
    ///
    /// rsockets send a zero-byte RDMA write as the probe from a service thread.
    /// They accept and ignore TCP_KEEPCNT and TCP_KEEPINTVL (a reliable
    /// connection needs no retries), which is why this option offers neither.
    /// Before keep-alive is first enabled, an rsocket reports an idle time of
    /// 0 where a kernel socket reports its default.
    ///
    /// apply sets the idle time first, so that probing never starts with the
    /// old one; when SO_KEEPALIVE then fails, the new idle time stays set.
    class keep_alive {
    public:
        /// False: both transports take this option.
        static constexpr bool rdma_only = false;
        /// The longest idle time Linux takes for TCP_KEEPIDLE, on both transports.
        static constexpr std::chrono::seconds max_idle{32767};

        /// Keep-alive on or off, with the idle time before the first probe (zero: the socket's
        /// own); default-constructed to be filled in by get_option.
        explicit keep_alive(bool on = false, std::chrono::seconds idle = {}) noexcept
            : value_(on), idle_(idle) {}
        /// The value to set, or the one get_option read back.
        bool value() const noexcept { return value_; }
        /// Seconds of silence before the first probe; zero leaves the socket's own.
        std::chrono::seconds idle() const noexcept { return idle_; }
        /// The flag's value.
        explicit operator bool() const noexcept { return value_; }
        /// True when the flag is off.
        bool operator!() const noexcept { return !value_; }

        /// Validates the value and sets it on descriptor `fd` through the transport's `ops`:
        /// boost::asio::error::invalid_argument for a value out of range, before any call; else the
        /// call's error, if any.
        boost::system::error_code apply(const detail::socket_ops& ops, int fd) const;
        /// Reads both SO_KEEPALIVE and TCP_KEEPIDLE.
        boost::system::error_code query(const detail::socket_ops& ops, int fd);

    private:
        bool value_;
        std::chrono::seconds idle_;
    };

    /// SO_LINGER, as boost::asio::socket_base::linger: whether close waits
    /// up to timeout() seconds for unsent data. Valid timeout: 0 to
    /// max_timeout. rsockets (v44) store only the on/off switch, report a
    /// timeout of 0 whatever was set, and act on neither (rclose never
    /// lingers); a fresh rsocket reports linger on, the kernel off.
    class linger {
    public:
        /// False: both transports take this option.
        static constexpr bool rdma_only = false;
        /// The longest timeout apply() accepts, in seconds.
        static constexpr int max_timeout = 32767;

        /// An option holding `enabled` and `timeout` (seconds).
        explicit linger(bool enabled = false, int timeout = 0) noexcept
            : enabled_(enabled), timeout_(timeout) {}
        /// Whether close lingers.
        bool enabled() const noexcept { return enabled_; }
        /// How long, in seconds.
        int timeout() const noexcept { return timeout_; }

        /// Validates the timeout and sets the option on `fd` through `ops`:
        /// boost::asio::error::invalid_argument for a timeout out of range.
        boost::system::error_code apply(const detail::socket_ops& ops, int fd) const;
        /// Reads the option of `fd` through `ops` into this object.
        boost::system::error_code query(const detail::socket_ops& ops, int fd);

    private:
        bool enabled_;
        int timeout_;
    };

    /// SO_OOBINLINE: out-of-band bytes stay in the stream. rsockets (v44)
    /// store and report it, but carry no out-of-band data (a send with
    /// message_out_of_band is refused), so it changes nothing there.
    class oob_inline {
    public:
        /// False: both transports take this option.
        static constexpr bool rdma_only = false;

        /// An option holding `v`.
        explicit oob_inline(bool v = false) noexcept : value_(v) {}
        /// The value to set, or the one get_option read back.
        bool value() const noexcept { return value_; }
        /// value().
        explicit operator bool() const noexcept { return value_; }
        /// !value().
        bool operator!() const noexcept { return !value_; }

        /// Sets the option on `fd` through `ops`.
        boost::system::error_code apply(const detail::socket_ops& ops, int fd) const;
        /// Reads the option of `fd` through `ops` into this object.
        boost::system::error_code query(const detail::socket_ops& ops, int fd);

    private:
        bool value_;
    };

    /// TCP_MAXSEG, the largest segment in bytes. Valid: min_value to
    /// max_value (Linux's bounds). The kernel honours it before connect.
    /// rsockets (v44) take any value with success and ignore it; they
    /// report 2048 until the connection has a route, then the path MTU.
    class max_segment {
    public:
        /// False: both transports take this option.
        static constexpr bool rdma_only = false;
        /// The smallest value apply() accepts (Linux's TCP_MIN_MSS).
        static constexpr int min_value = 88;
        /// The largest value apply() accepts (Linux's MAX_TCP_WINDOW).
        static constexpr int max_value = 32767;

        /// An option holding `v`.
        explicit max_segment(int v = 0) noexcept : value_(v) {}
        /// The value to set, or the one get_option read back.
        int value() const noexcept { return value_; }

        /// Validates the value and sets it on `fd` through `ops`:
        /// boost::asio::error::invalid_argument for a value out of range.
        boost::system::error_code apply(const detail::socket_ops& ops, int fd) const;
        /// Reads the option of `fd` through `ops` into this object.
        boost::system::error_code query(const detail::socket_ops& ops, int fd);

    private:
        int value_;
    };

    /// IPV6_V6ONLY, as boost::asio::ip::v6_only: an IPv6 socket takes no
    /// IPv4 peers. Set it before bind. rsockets (v44) store it and, on
    /// streams, pass it to rdma_cm (RDMA_OPTION_ID_AFONLY); an IPv4 rsocket
    /// takes it too, where the kernel refuses it.
    class v6_only {
    public:
        /// False: both transports take this option.
        static constexpr bool rdma_only = false;

        /// An option holding `v`.
        explicit v6_only(bool v = false) noexcept : value_(v) {}
        /// The value to set, or the one get_option read back.
        bool value() const noexcept { return value_; }
        /// value().
        explicit operator bool() const noexcept { return value_; }
        /// !value().
        bool operator!() const noexcept { return !value_; }

        /// Sets the option on `fd` through `ops`.
        boost::system::error_code apply(const detail::socket_ops& ops, int fd) const;
        /// Reads the option of `fd` through `ops` into this object.
        boost::system::error_code query(const detail::socket_ops& ops, int fd);

    private:
        bool value_;
    };

    /// The form the three queue-pair sizes below share: an int from 0 to
    /// max_value (rsockets keep it in 16 bits), for rsockets only, before
    /// connect or listen. `Name` is the rsocket option's number
    /// (RDMA_SQSIZE, RDMA_RQSIZE, RDMA_INLINE), which socket_base.cpp checks
    /// against <rdma/rsocket.h> so that this header need not include it.
    template <int Name>
    class rdma_queue_option {
    public:
        /// True: only rsockets take this option, and only before connect or listen.
        static constexpr bool rdma_only = true;
        /// The largest value apply() accepts.
        static constexpr int max_value = 0xfffe;

        /// An option holding `v`: to set, or default-constructed to be filled in by get_option.
        explicit rdma_queue_option(int v = 0) noexcept : value_(v) {}
        /// The value to set, or the one get_option read back.
        int value() const noexcept { return value_; }

        /// Validates the value and sets it on descriptor `fd` through the transport's `ops`:
        /// boost::asio::error::invalid_argument for a value out of range, before any call; else the
        /// call's error, if any.
        boost::system::error_code apply(const detail::socket_ops& ops, int fd) const;
        /// Reads the option of descriptor `fd` through `ops` into this object.
        boost::system::error_code query(const detail::socket_ops& ops, int fd);

    private:
        int value_;
    };

    /// RDMA_SQSIZE: send queue entries. When the queue pair is made,
    /// rsockets raise it to at least 16 and lower it to what the device
    /// allows, and a query after connect shows the result.
    using sq_size = rdma_queue_option<0>;

    /// RDMA_RQSIZE: receive queue entries, bounded and adjusted like sq_size.
    using rq_size = rdma_queue_option<1>;

    /// RDMA_INLINE: the largest send, in bytes, carried inline in the work
    /// request. The device may grant less when the queue pair is made; a
    /// query after connect shows what it granted.
    using inline_size = rdma_queue_option<2>;

    /// RDMA_IOMAPSIZE: how many riomap mappings the peer may publish to this
    /// socket. rsockets send it to the peer as one byte, so they round it:
    /// up to 128 it is kept, 129 to 255 become 128, and larger values are
    /// rounded down to a multiple of 256, at most max_value. A larger request
    /// would wrap around in that byte, so it is refused. rounded() gives what
    /// a query will read back.
    ///
    /// tcp: recorded the same way (rounded, before connect or listen only).
    /// Above zero it turns on the framed emulation of riomap/riowrite when
    /// the socket connects or listens, and both ends must set it
    /// (doc/tcp-transport.md); at zero the socket stays plain TCP. It is also
    /// the most PROT_WRITE mappings this side may hold at once.
    class iomap_size {
    public:
        /// True: only rsockets take this option, and only before connect or listen.
        static constexpr bool rdma_only = true;
        /// The largest value apply() accepts.
        static constexpr int max_value = 32512;

        /// An option holding `v`: to set, or default-constructed to be filled in by get_option.
        explicit iomap_size(int v = 0) noexcept : value_(v) {}
        /// The value to set, or the one get_option read back.
        int value() const noexcept { return value_; }

        /// The size rsockets store for a valid request `v`.
        static constexpr int rounded(int v) noexcept {
            if (v <= 128)
                return v;
            return v < 256 ? 128 : v & ~0xff;
        }

        /// Validates the value and sets it on descriptor `fd` through the transport's `ops`:
        /// boost::asio::error::invalid_argument for a value out of range, before any call; else the
        /// call's error, if any.
        boost::system::error_code apply(const detail::socket_ops& ops, int fd) const;
        /// Reads the option of descriptor `fd` through `ops` into this object.
        boost::system::error_code query(const detail::socket_ops& ops, int fd);

    private:
        int value_;
    };

    /// RDMA_ROUTE: the path records (struct ibv_path_data) a connect uses
    /// instead of resolving a route. Set before connect: 1 to max_paths
    /// records, one of them flagged IBV_PATH_FLAG_GMP | PRIMARY |
    /// BIDIRECTIONAL and every reserved field 0, else invalid_argument
    /// before any call (the kernel's rdma_cm wants that record). rsockets
    /// keep the records until connect and hand them to rdma_cm there.
    /// Query reads the connection's records, so it needs a connected socket
    /// (boost::asio::error::not_connected before): v44's getsockopt copies
    /// the caller's buffer over records not yet used instead of reporting
    /// them. A kernel socket: corio::error::not_supported_by_transport.
    class rdma_route {
    public:
        /// True: an RDMA option, set before connect.
        static constexpr bool rdma_only = true;
        /// The most records an option holds.
        static constexpr std::size_t max_paths = 4;

        /// No records: to be filled in by get_option.
        rdma_route() noexcept = default;
        /// The records in `paths` (at most max_paths are kept; apply()
        /// refuses more).
        explicit rdma_route(std::span<const ibv_path_data> paths) noexcept;
        /// The records set, or those get_option read back.
        std::span<const ibv_path_data> paths() const noexcept { return {paths_.data(), count_}; }

        /// Validates the records and sets them on `fd` through `ops`.
        boost::system::error_code apply(const detail::socket_ops& ops, int fd) const;
        /// Reads the connection's records of `fd` through `ops` into this object.
        boost::system::error_code query(const detail::socket_ops& ops, int fd);

    private:
        std::array<ibv_path_data, max_paths> paths_{};
        std::size_t count_ = 0;
        bool too_many_ = false;
    };
};

// Their members are defined, and these three instantiated, in socket_base.cpp.
extern template class socket_base::rdma_queue_option<0>;
extern template class socket_base::rdma_queue_option<1>;
extern template class socket_base::rdma_queue_option<2>;

/// What set_option and get_option accept: an option that can be applied to
/// and queried from a descriptor through an ops table, and that says whether
/// only rsockets understand it.
template <class T>
concept socket_option =
    requires(T& option, const T& const_option, const detail::socket_ops& ops, int fd) {
        typename std::bool_constant<T::rdma_only>;
        { const_option.apply(ops, fd) } -> std::same_as<boost::system::error_code>;
        { option.query(ops, fd) } -> std::same_as<boost::system::error_code>;
    };

} // namespace corio
