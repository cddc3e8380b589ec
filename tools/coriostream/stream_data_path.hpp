#pragma once

#include <cstddef>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "data_path.hpp"
#include "transfer_context.hpp"

namespace coriostream {

/// rstream's protocol (rdma-core's librdmacm/examples/rstream.c): every
/// transfer is copied through the stream with rsend and rrecv, as send and recv are
/// on kernel sockets. Per test, the client sends 16 bytes and the server
/// answers with 16; then each iteration the client sends transfer_count
/// transfers and receives as many back. With -T v every buffer sent is
/// formatted first and every buffer received is verified, the 16-byte
/// handshake included, with common.c's counters.
class stream_data_path final : public data_path {
public:
    explicit stream_data_path(const transfer_context& context);

    boost::asio::awaitable<transfer_timing> run_test(const test_case& test) override;

private:
    /// rstream's send_xfer and recv_xfer; `timed` transfers count towards
    /// the progress line.
    boost::asio::awaitable<void> send_xfer(std::size_t size, bool timed);
    boost::asio::awaitable<void> recv_xfer(std::size_t size, bool timed);
    boost::asio::awaitable<void> sync_test();

    transfer_context context_;
    std::string send_call_;
    std::string recv_call_;
};

} // namespace coriostream
