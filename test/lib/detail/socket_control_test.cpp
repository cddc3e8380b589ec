#define BOOST_TEST_MODULE socket_control
#include <boost/test/unit_test.hpp>

#include <array>
#include <memory>

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <boost/asio/error.hpp>
#include <boost/system/error_code.hpp>

#include <corio/detail/socket_control.hpp>
#include <corio/detail/socket_impl.hpp>
#include <corio/detail/try_transfer.hpp>

#include "loopback_pair.hpp"

// try_call's would_block_note, which lets an async_wait that follows a
// would_block skip its own look (wait_operation::perform). A note that
// stands when it should not costs a wait that never ends, so each way it
// must lapse is checked here.

using boost::system::error_code;
using corio::detail::socket_impl;
using corio::detail::wait_kind;

namespace {

/// A socket_impl over one end of a loopback pair, nonblocking as the
/// library keeps every descriptor, and the other end to write from.
struct noted_socket {
    noted_socket() {
        auto [a, b] = corio::test::make_tcp_loopback_pair();
        BOOST_TEST_REQUIRE(::fcntl(a.get(), F_SETFL, ::fcntl(a.get(), F_GETFL) | O_NONBLOCK) == 0);
        impl->socket_ = std::move(a);
        impl->non_blocking_ = true;
        peer = std::move(b);
    }

    /// One read_some through try_transfer.
    error_code read() {
        std::array<unsigned char, 64> buffer{};
        iovec iov{buffer.data(), buffer.size()};
        error_code ec;
        corio::detail::try_transfer(*impl, wait_kind::read, &iov, 1, buffer.size(), ec);
        return ec;
    }

    void peer_writes() {
        const unsigned char byte = 0x42;
        BOOST_TEST_REQUIRE(::write(peer.get(), &byte, 1) == 1);
    }

    /// A reactor wait of `kind` ended, as rpoll_service::on_reactor_wait
    /// counts it.
    void reactor_wait_ends(wait_kind kind) {
        impl->reactor_wait_ends_[static_cast<int>(kind)].fetch_add(1);
    }

    std::shared_ptr<socket_impl> impl = std::make_shared<socket_impl>(1);
    corio::detail::unique_socket peer;
};

} // namespace

BOOST_AUTO_TEST_CASE(a_call_that_would_block_leaves_one_note_of_its_kind) {
    noted_socket s;
    const error_code ec = s.read();
    BOOST_TEST_REQUIRE((ec == boost::asio::error::would_block), ec.message());
    BOOST_TEST(!s.impl->take_would_block_note(wait_kind::write));
    BOOST_TEST(!s.impl->take_would_block_note(wait_kind::error));
    BOOST_TEST(s.impl->take_would_block_note(wait_kind::read));
    // Taken: a second wait looks for itself.
    BOOST_TEST(!s.impl->take_would_block_note(wait_kind::read));
}

BOOST_AUTO_TEST_CASE(a_reactor_wait_that_ended_after_the_call_voids_the_note) {
    noted_socket s;
    BOOST_TEST_REQUIRE((s.read() == boost::asio::error::would_block));
    // Its edge may have been reported to nobody: the note proves nothing now.
    s.reactor_wait_ends(wait_kind::read);
    BOOST_TEST(!s.impl->take_would_block_note(wait_kind::read));

    // A call after that end notes again, and another kind's end leaves it.
    BOOST_TEST_REQUIRE((s.read() == boost::asio::error::would_block));
    s.reactor_wait_ends(wait_kind::write);
    BOOST_TEST(s.impl->take_would_block_note(wait_kind::read));
}

BOOST_AUTO_TEST_CASE(a_call_that_moves_bytes_leaves_no_note) {
    noted_socket s;
    BOOST_TEST_REQUIRE((s.read() == boost::asio::error::would_block));
    s.peer_writes();
    // The byte is on its way over loopback: bounded retries until it lands.
    error_code ec = boost::asio::error::would_block;
    for (int i = 0; i < 100000 && ec == boost::asio::error::would_block; ++i)
        ec = s.read();
    BOOST_TEST_REQUIRE(!ec, ec.message());
    BOOST_TEST(!s.impl->take_would_block_note(wait_kind::read));
}
