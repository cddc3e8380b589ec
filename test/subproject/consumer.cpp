// A program outside corio that uses it, built once with corio as a meson
// subproject and once against an installed corio through pkg-config. It
// includes every public header, so that a header (or a detail header one
// of them needs) left out of the install fails the build.
#include <cstdio>
#include <string_view>

#include <corio/acceptor.hpp>
#include <corio/basic_acceptor.hpp>
#include <corio/basic_stream.hpp>
#include <corio/basic_zero_copy_receiver.hpp>
#include <corio/basic_zero_copy_sender.hpp>
#include <corio/config.hpp>
#include <corio/error.hpp>
#include <corio/iomap_registration.hpp>
#include <corio/poll_mode.hpp>
#include <corio/rdma_available.hpp>
#include <corio/resolver.hpp>
#include <corio/rpoll_service.hpp>
#include <corio/socket_base.hpp>
#include <corio/stream.hpp>
#include <corio/transport.hpp>
#include <corio/zero_copy_channel.hpp>
#include <corio/zero_copy_message.hpp>
#include <corio/zero_copy_options.hpp>

int main() {
    const boost::system::error_code ec = corio::error::protocol_error;
    if (std::string_view(ec.category().name()) != "corio")
        return 1;
    std::printf("rdma_available=%d repoll=%d\n", corio::rdma_available() ? 1 : 0,
                CORIO_HAVE_REPOLL);
    return 0;
}
