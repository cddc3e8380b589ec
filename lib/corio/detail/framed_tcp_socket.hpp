#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include <sys/types.h>
#include <sys/uio.h>

#include <boost/system/error_code.hpp>

#include <corio/detail/local_mappings.hpp>
#include <corio/detail/remote_mapping.hpp>
#include <corio/detail/tcp_frame.hpp>
#include <corio/detail/tcp_frame_parser.hpp>

namespace corio::detail {

/// The state of one kernel TCP socket that emulates riomap/riowrite
/// (doc/tcp-transport.md): the option that asked for it, this side's
/// mappings, the receive parser, and what is owed to the peer of a frame
/// only partly sent. framed_tcp_ops keeps one per descriptor and makes every
/// call through it; the calls are nonblocking, keep their state across
/// would_block, and report counts as the socket_ops conventions say.
///
/// Receiving: each receive call reads the wire straight into its place
/// (header buffer, the caller's buffers, or a mapping) and goes on until the
/// caller's buffers are full or the kernel has nothing more. So iowrite bytes
/// land during the receive call that reaches their frame, and always before
/// any stream byte sent after them is returned.
///
/// Sending: a call writes at most one frame header and the payload bytes the
/// kernel takes with it. A header the kernel took only part of is owed and
/// goes out first on the next call; a data frame's missing payload is filled
/// by the caller's next stream bytes; an iowrite frame's by the next iowrite
/// that continues it, or else with zeros inside the mapping it targets.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: safe; a mutex serialises calls.
class framed_tcp_socket {
public:
    explicit framed_tcp_socket(int iomap_size) noexcept;

    framed_tcp_socket(const framed_tcp_socket&) = delete;
    framed_tcp_socket& operator=(const framed_tcp_socket&) = delete;

    int iomap_size() const;
    /// invalid_argument once the connection has started.
    boost::system::error_code set_iomap_size(int value);

    /// The socket is connected (or connecting, or accepted): framing starts,
    /// and this side's hello is the first thing it will send.
    void start();
    bool started() const;

    /// With `peek`, returns the stream bytes of the current data frame
    /// without consuming them (MSG_PEEK); the hello, headers and iowrite
    /// frames before them are consumed as usual, their bytes landing.
    std::size_t receive(int fd, const iovec* iov, int iovcnt, boost::system::error_code& ec,
                        bool peek = false);
    std::size_t send(int fd, const iovec* iov, int iovcnt, boost::system::error_code& ec);
    /// A lower bound on what receive() can deliver now: the part of the
    /// data frame being read that the kernel already holds. Frame headers
    /// in the kernel's count are not payload, so a frame not begun yet
    /// counts as nothing until a read has parsed its header.
    std::size_t available(int fd, boost::system::error_code& ec);
    std::size_t iowrite(int fd, const void* buf, std::size_t count, off_t offset,
                        const remote_mapping& target, boost::system::error_code& ec);

    off_t iomap(void* buf, std::size_t len, int prot, off_t offset, boost::system::error_code& ec);
    boost::system::error_code iounmap(void* buf, std::size_t len);

    /// Best effort, never blocking: sends what is owed of a partly sent
    /// header or iowrite frame, so that a shutdown or close after it ends
    /// the stream at a frame boundary when the kernel has room.
    void flush(int fd);

private:
    enum class open_frame { none, data, iowrite };

    bool flush_owed(int fd, boost::system::error_code& ec);
    bool pad_iowrite(int fd, boost::system::error_code& ec);
    std::size_t write_frame(int fd, tcp_frame::frame_type type, const iovec* iov, int iovcnt,
                            std::size_t length, std::uint64_t offset,
                            boost::system::error_code& ec);
    void fail_connection(int fd);

    mutable std::mutex mutex_;
    int iomap_size_;
    bool started_ = false;
    local_mappings mappings_;
    tcp_frame_parser parser_{mappings_};
    /// A protocol error ended the connection: every later call reports it.
    boost::system::error_code failure_;

    /// Protocol bytes the peer must get before anything else: the hello,
    /// then the rest of a header the kernel took only part of.
    std::array<std::byte, 2 * tcp_frame::header_size> owed_{};
    std::size_t owed_begin_ = 0;
    std::size_t owed_end_ = 0;
    /// The frame whose payload is still being sent, and how much is missing.
    open_frame open_ = open_frame::none;
    std::size_t remaining_ = 0;
    /// Open iowrite frame: the peer offset its next payload byte lands at.
    std::uint64_t next_offset_ = 0;
};

} // namespace corio::detail
