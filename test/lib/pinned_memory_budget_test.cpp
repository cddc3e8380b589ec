#define BOOST_TEST_MODULE pinned_memory_budget
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <vector>

#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/system/system_error.hpp>

#include <corio/error.hpp>
#include <corio/iomap_registration.hpp>
#include <corio/memlock_limit.hpp>
#include <corio/pinned_memory_budget.hpp>

#include "coroutine_test.hpp"
#include "primed_rsocket_services.hpp"
#include "transport_under_test.hpp"

CORIO_TEST_PRIMED_TRANSPORT_FIXTURE();

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

/// Page-aligned memory of `pages` pages, so that its pinned size is exact.
struct pages {
    explicit pages(std::size_t n) : size(n * ::sysconf(_SC_PAGESIZE)) {
        data = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        BOOST_REQUIRE(data != MAP_FAILED);
    }
    ~pages() { ::munmap(data, size); }
    asio::mutable_buffer buffer() const { return {data, size}; }
    void* data;
    std::size_t size;
};

/// Drops CAP_IPC_LOCK from this process's effective set (root in the guest
/// holds it, and it lifts RLIMIT_MEMLOCK); true if it is not held after.
bool without_ipc_lock() {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    if (::syscall(SYS_capget, &header, data) != 0)
        return false;
    data[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
    return ::syscall(SYS_capset, &header, data) == 0;
}

} // namespace

BOOST_AUTO_TEST_CASE(pinned_size_counts_whole_pages) {
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const pages two(2);
    auto* base = static_cast<char*>(two.data);
    BOOST_TEST(corio::pinned_size(base, 1) == page);
    BOOST_TEST(corio::pinned_size(base + page - 1, 2) == 2 * page);
    BOOST_TEST(corio::pinned_size(base, 2 * page) == 2 * page);
    BOOST_TEST(corio::pinned_size(base, 0) == 0u);
}

BOOST_AUTO_TEST_CASE(memlock_check_compares_limit_with_what_is_pinned) {
    const corio::memlock_limit unlimited{std::nullopt, 1 << 20};
    BOOST_TEST(!unlimited.check(std::uint64_t{1} << 40));
    const corio::memlock_limit low{65536, 8192};
    BOOST_TEST(!low.check(65536 - 8192));
    BOOST_TEST((low.check(65536 - 8192 + 1) == corio::error::memlock_limit_exceeded));
    const corio::memlock_limit over{4096, 8192}; // lowered below what is pinned
    BOOST_TEST((over.check(1) == corio::error::memlock_limit_exceeded));
}

CORIO_COROUTINE_TEST_CASE(the_budget_refuses_beyond_it_and_takes_back_on_unmap) {
    auto [client, server] = co_await corio::test::make_mappable_stream_pair(2);
    auto& budget = corio::pinned_memory_budget_of(server.get_executor());
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    budget.set_limit(2 * page);
    const pages first(2), second(1);
    {
        corio::iomap_registration a(server, first.buffer(), PROT_WRITE, -1);
        BOOST_TEST(budget.in_use() == 2 * page);
        error_code ec;
        corio::iomap_registration b(server, second.buffer(), PROT_WRITE, -1, ec);
        BOOST_TEST((ec == corio::error::pinned_memory_budget_exhausted), ec.message());
        BOOST_TEST(!b.is_mapped());
        BOOST_TEST(budget.in_use() == 2 * page);
    }
    BOOST_TEST(budget.in_use() == 0u);
    corio::iomap_registration b(server, second.buffer(), PROT_WRITE, -1);
    BOOST_TEST(budget.in_use() == page);
    // A stream closed under its mappings gives their budget back with them.
    server.close();
    (void)b.reset();
    BOOST_TEST(budget.in_use() == 0u);
    budget.set_limit(corio::pinned_memory_budget::unlimited);
}

CORIO_COROUTINE_TEST_CASE(a_low_memlock_limit_is_reported_with_the_amounts) {
    auto [client, server] = co_await corio::test::make_mappable_stream_pair(1);
    rlimit saved{};
    BOOST_REQUIRE(::getrlimit(RLIMIT_MEMLOCK, &saved) == 0);
    BOOST_REQUIRE(without_ipc_lock());
    // Room for one page beyond what this process (its streams) pinned so far.
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const auto now = corio::memlock_limit::current();
    rlimit low = saved;
    low.rlim_cur = now.pinned + page;
    BOOST_REQUIRE(::setrlimit(RLIMIT_MEMLOCK, &low) == 0);
    const pages region(16);
    error_code ec;
    corio::iomap_registration mapping(server, region.buffer(), PROT_WRITE, -1, ec);
    if (corio::test::transport_under_test() == corio::transport::rsocket) {
        BOOST_TEST((ec == corio::error::memlock_limit_exceeded), ec.message());
        try {
            corio::iomap_registration thrown(server, region.buffer(), PROT_WRITE, -1);
            BOOST_FAIL("no exception");
        } catch (const boost::system::system_error& e) {
            const std::string what = e.what();
            BOOST_TEST(what.find("needs " + std::to_string(16 * page) + " bytes") !=
                           std::string::npos, what);
            BOOST_TEST(what.find("RLIMIT_MEMLOCK is " + std::to_string(low.rlim_cur)) !=
                           std::string::npos, what);
            BOOST_TEST(what.find("ulimit -l") != std::string::npos, what);
        }
    } else {
        // Kernel TCP's emulation pins nothing: the limit does not apply.
        BOOST_TEST(!ec, ec.message());
    }
    BOOST_TEST(::setrlimit(RLIMIT_MEMLOCK, &saved) == 0);
}
