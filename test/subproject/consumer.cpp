// A program outside corio that uses it, built once with corio as a meson
// subproject and once against an installed corio through pkg-config.
#include <cstdio>
#include <string_view>

#include <corio/config.hpp>
#include <corio/error.hpp>
#include <corio/rdma_available.hpp>

int main() {
    const boost::system::error_code ec = corio::error::protocol_error;
    if (std::string_view(ec.category().name()) != "corio")
        return 1;
    std::printf("rdma_available=%d repoll=%d\n", corio::rdma_available() ? 1 : 0,
                CORIO_HAVE_REPOLL);
    return 0;
}
