#include "corio/detail/rsocket_ops.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

#include <corio/config.hpp>
#include <corio/detail/background_closer.hpp>
#include <corio/detail/errno_result.hpp>
#include <corio/detail/open_rsocket_table.hpp>
#include <corio/detail/service_capacity.hpp>
#include <corio/error.hpp>

namespace corio::detail {

namespace {

using boost::system::error_code;

// rrecv, rsend, rreadv, rwritev, riomap, riounmap and riowrite find their
// socket with v44's unchecked idm_at: a number that never was an rsocket
// reads past the fd table and crashes. The data calls first ask
// open_rsockets, which knows every number this seam gave out and has not
// closed. Constant-initialized and trivially destroyed, so it is there for
// the background closer's threads at any time, with no guard on the path.
constinit open_rsocket_table open_rsockets;

// v44's rclose takes the socket out of its table before it unmaps the
// socket's iomaps, so each riounmap it makes fails with EBADF and its loop
// over the mappings never ends: rclose spins forever on a socket with a live
// mapping. The seam remembers every mapping and unmaps what is left before
// rclose. Mapping is rare (set-up, not the data path), so one lock will do.
class live_iomaps {
public:
    void add(int s, void* buf, std::size_t len) {
        std::lock_guard lock(mutex_);
        mappings_.emplace(s, std::pair(buf, len));
    }

    void remove(int s, void* buf, std::size_t len) {
        std::lock_guard lock(mutex_);
        auto [first, last] = mappings_.equal_range(s);
        for (auto it = first; it != last; ++it) {
            if (it->second == std::pair(buf, len)) {
                mappings_.erase(it);
                return;
            }
        }
    }

    void unmap_all(int s) {
        std::lock_guard lock(mutex_);
        auto [first, last] = mappings_.equal_range(s);
        for (auto it = first; it != last; ++it)
            ::riounmap(s, it->second.first, it->second.second);
        mappings_.erase(s);
    }

private:
    std::mutex mutex_;
    std::unordered_multimap<int, std::pair<void*, std::size_t>> mappings_;
};

// Never destroyed, like the service room below: close() runs on the background
// closer's threads, which process exit does not stop (detail::run_in_background),
// and a static destructor would free the table under a close still using it.
live_iomaps& iomaps() {
    static auto* instance = new live_iomaps;
    return *instance;
}

// librdmacm runs a service thread per kind of socket it watches: the
// connection service (connect_svc) watches every rsocket that came from
// raccept, or whose nonblocking rconnect said EINPROGRESS, until its rclose;
// the listen service (listen_svc) watches every listening rsocket. Both run
// v44's cm_svc_run, whose pollfd array grows by 4 entries each time the
// thread starts (when the watched count goes from 0 to 1), and by 4 more
// whenever a socket is added to a full array. Before rdma-core v44.7
// (CORIO_RDMACM_CM_SERVICE_GROWS_UNSAFELY; Debian 12 ships v44.0) the
// running thread keeps polling the old array after such a growth: poll
// writes into freed memory, and the process hangs or corrupts its heap.
// Seen in the guest from 4 echoing streams on (the service thread stuck in
// rdma_get_cm_event or in malloc, and every later rconnect and raccept
// waiting for it), and from 4 listening rsockets on (a segfault in 3 of 3
// runs with 8 listeners).
//
// Growth at thread start is safe. So before the first watched socket, the
// seam starts and stops the thread until the array has room for the
// capacity wanted, and it refuses sockets beyond that capacity with an
// error instead of letting librdmacm corrupt memory. The count it keeps
// includes calls in flight, so it never undercounts what the thread watches
// (rsockets opened outside corio are not seen).
socklen_t length_of(const sockaddr_storage& address);

class service_thread_room {
public:
    /// Starts and stops the service thread up to `starts` times, so that
    /// its array grows; returns how many starts ran the thread. `where` is
    /// the address the first socket is for.
    using primer = std::size_t (*)(const sockaddr* where, socklen_t len, std::size_t starts);

    service_thread_room(const char* capacity_variable, std::size_t default_capacity, primer prime,
                        error full, error invalid, int priming_key) noexcept
        : capacity_variable_(capacity_variable), default_capacity_(default_capacity),
          prime_(prime), full_(full), invalid_(invalid), priming_key_(priming_key) {}

    /// Starts priming in the background, once per process, if nothing is
    /// watched yet. The connection room is primed from the process's first
    /// stream rsocket, so that by its first connect or accept the room is
    /// ready; the listen room from the first listen, which waits for it: a
    /// process that never listens (a client) starts no listen service and
    /// opens no priming listeners. Priming costs a thread start per 4
    /// places (a median 8 ms each under the guest's emulation, up to 87
    /// ms) and must not run on an io_context thread.
    void start_priming(int family) {
        if (!CORIO_RDMACM_CM_SERVICE_GROWS_UNSAFELY)
            return;
        std::lock_guard lock(mutex_);
        if (!capacity() || primed_ || priming_ || count_ > 0)
            return;
        priming_ = true;
        const std::size_t starts = (*capacity() + 3) / 4;
        const auto job = [this, family, starts] {
            // Any local address: rdma_cm finds the device.
            sockaddr_storage any{};
            any.ss_family = static_cast<sa_family_t>(family);
            const std::size_t done =
                prime_(reinterpret_cast<sockaddr*>(&any), length_of(any), starts);
            std::lock_guard lock(mutex_);
            primed(done);
        };
        if (run_in_background(priming_key_, job)) {
            // No worker could start; the job stays queued, but nothing may
            // wait on it: prime on the next claim instead.
            priming_ = false;
        }
    }

    /// Claims room for one socket about to be watched. `where` is an address
    /// on an RDMA device (port ignored) to prime with if priming has not
    /// started; a wildcard address means any local one. While a background
    /// priming runs, or the room is full but closes under way will free it,
    /// a claim that may not wait (on an io_context thread) gets try_again
    /// and is retried by its operation; one that may waits. While the
    /// capacity variable is invalid, every claim fails with its error.
    error_code claim(const sockaddr* where, socklen_t len, bool may_wait = true) {
        if (!CORIO_RDMACM_CM_SERVICE_GROWS_UNSAFELY)
            return {};
        std::unique_lock lock(mutex_);
        if (!capacity())
            return invalid_;
        if (priming_) {
            if (!may_wait)
                return boost::asio::error::try_again;
            freed_.wait(lock, [this] { return !priming_; });
        }
        if (count_ == 0 && !primed_)
            primed(prime_(where, len, (*capacity() + 3) / 4));
        // Closes run in the background: a server that closes its listeners
        // and opens new ones at once finds the room taken by closes still
        // queued or under way. Those end soon, so wait for them, boundedly,
        // rather than refuse what the application counts as free room.
        // (The closer does not say which of its jobs free this room, so the
        // wait looks again every few milliseconds.)
        const auto now = std::chrono::steady_clock::now();
        if (may_wait) {
            const auto give_up = now + closing_wait;
            while (count_ >= room_ && closes_pending() &&
                   std::chrono::steady_clock::now() < give_up)
                freed_.wait_for(lock, std::chrono::milliseconds(5));
        } else if (count_ >= room_ && closes_pending()) {
            // The same bound for claims that come back: measured from the
            // first one that found the room full, reset once a claim gets in.
            if (!full_since_)
                full_since_ = now;
            if (now - *full_since_ < closing_wait)
                return boost::asio::error::try_again;
        }
        if (count_ >= room_)
            return full_;
        full_since_.reset();
        ++count_;
        return {};
    }

    /// The claimed socket `s` is now watched until it is closed.
    void watched(int s) {
        if (!CORIO_RDMACM_CM_SERVICE_GROWS_UNSAFELY)
            return;
        std::lock_guard lock(mutex_);
        watched_.insert(s);
    }

    /// The call made after claim added nothing to the service.
    void unclaim() {
        if (!CORIO_RDMACM_CM_SERVICE_GROWS_UNSAFELY)
            return;
        std::lock_guard lock(mutex_);
        --count_;
    }

    /// `s` is about to be closed; true when it was watched, and then its
    /// claim is given back with closed() once rclose returned (the number
    /// may be reused from then on, the room only after the service let go).
    bool closing(int s) {
        if (!CORIO_RDMACM_CM_SERVICE_GROWS_UNSAFELY)
            return false;
        std::lock_guard lock(mutex_);
        if (watched_.erase(s) == 0)
            return false;
        ++closing_;
        return true;
    }

    /// The rclose of a socket that closing() reported as watched returned.
    void closed() {
        std::lock_guard lock(mutex_);
        --count_;
        --closing_;
        freed_.notify_all();
    }

private:
    bool closes_pending() const { return closing_ > 0 || background_jobs_pending() > 0; }

    /// What the capacity variable asks for, empty when it is invalid; read
    /// at the first call, with the mutex held, which is the process's first
    /// stream rsocket (start_priming) or listen: a program may set the
    /// variable until then.
    const std::optional<std::size_t>& capacity() {
        if (!capacity_read_) {
            capacity_ = parse_service_capacity(std::getenv(capacity_variable_), default_capacity_);
            capacity_read_ = true;
        }
        return capacity_;
    }

    /// Records a priming that started the thread `done` times, with the
    /// mutex held. Priming is tried once; an address that cannot start the
    /// thread leaves the unprimed room. (A second priming racing the
    /// background one cannot happen: claims wait for it, or come back.)
    void primed(std::size_t done) {
        primed_ = true;
        if (priming_) {
            priming_ = false;
            freed_.notify_all();
        }
        if (done > 0) {
            // The array holds 4 entries per start, entry 0 being the
            // thread's own socket; the next real start adds 4 more. The
            // capacity asked for is the limit, even where the array has a
            // few more entries.
            room_ = std::min(4 * done + 3, *capacity());
        }
    }

    const char* const capacity_variable_;
    const std::size_t default_capacity_;
    const primer prime_;
    const error full_;
    const error invalid_;
    const int priming_key_;
    /// The longest a claim waits for closes under way to free room.
    static constexpr std::chrono::seconds closing_wait{5};

    std::mutex mutex_;
    std::condition_variable freed_;
    std::optional<std::size_t> capacity_;
    bool capacity_read_ = false;
    std::unordered_set<int> watched_;
    /// Watched sockets plus claims in flight.
    std::size_t count_ = 0;
    /// Watched sockets whose rclose is under way (counted in count_ too).
    std::size_t closing_ = 0;
    /// What the array holds without growing while the thread runs: 3 when
    /// it first starts.
    std::size_t room_ = 3;
    bool primed_ = false;
    /// A background priming is under way; nothing may be watched until it
    /// ends.
    bool priming_ = false;
    /// When a claim that may not wait first found the room full with closes
    /// pending; such claims get full_ once closing_wait has passed since.
    std::optional<std::chrono::steady_clock::time_point> full_since_;
};

/// Misses allowed while priming: a few before the first start (an address
/// that cannot start the thread at all costs little), more once it has
/// started. A start can miss without touching the thread (say, a
/// resolution error).
std::size_t max_priming_misses(std::size_t done) { return done == 0 ? 4 : 64; }

/// Runs `cycle` until it has started the thread `starts` times or missed too
/// often; returns the starts. `after_each` runs after every try.
template <class Cycle, class After>
std::size_t cycle_until(std::size_t starts, Cycle cycle, After after_each) {
    std::size_t done = 0;
    std::size_t misses = 0;
    while (done < starts && misses < max_priming_misses(done)) {
        if (cycle())
            ++done;
        else
            ++misses;
        after_each();
    }
    return done;
}

void set_port(sockaddr_storage& address, in_port_t port) {
    if (address.ss_family == AF_INET)
        reinterpret_cast<sockaddr_in&>(address).sin_port = port;
    else
        reinterpret_cast<sockaddr_in6&>(address).sin6_port = port;
}

socklen_t length_of(const sockaddr_storage& address) {
    return address.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
}

// --- The listen service's gate -------------------------------------------
// v44 serializes every message to its service threads under one global
// mutex (rs_notify_svc's svc_mut), held until the thread answers. The
// listen service's thread accepts each connection request with a blocking
// rdma_accept, which returns only once the client has answered (RTU). A
// nonblocking rconnect sends its request and then, before it returns,
// registers its socket with the connection service under that same mutex;
// until it is registered nobody reads the client's connect response, so
// the RTU is not sent. So when a client of this process is in that window
// while another thread's rlisten or listener rclose holds the mutex,
// waiting for the listen service's answer, all three wait for each other
// for good (seen in the guest: stream_test over IPv6 hung in 1 run of 20,
// the io thread in rconnect, the background closer in rclose of the
// previous case's listener, the listen thread in rdma_accept).
//
// The gate breaks the cycle: an rconnect holds it shared, rlisten and a
// listener's rclose exclusively, so no listen-service message is ever
// waiting while one of this process's rconnects is inside. A connect that
// finds the gate taken comes back with try_again and is retried on its
// service's tick, as while its room is primed; listen and close wait.
std::shared_mutex& listen_service_gate() {
    static auto* instance = new std::shared_mutex;
    return *instance;
}

// --- Priming the connection service --------------------------------------
// One start and stop of its thread is a nonblocking rconnect, still in
// progress, to an rdma_cm listener that never answers, then its rclose.

/// One start and stop of the service thread; true when the thread ran.
bool cycle_connect_service(const sockaddr* where, socklen_t len) {
    const int s = ::rsocket(where->sa_family, SOCK_STREAM, 0);
    if (s < 0)
        return false;
    bool started = false;
    if (::rfcntl(s, F_SETFL, O_NONBLOCK) == 0) {
        std::shared_lock gate(listen_service_gate());
        started = ::rconnect(s, where, len) < 0 && errno == EINPROGRESS;
    }
    ::rclose(s);
    return started;
}

/// Drops the connection requests that reached the listener.
void drain_silent_listener(rdma_cm_id* listener) {
    rdma_cm_event* event = nullptr;
    while (::rdma_get_cm_event(listener->channel, &event) == 0) {
        rdma_cm_id* request = event->event == RDMA_CM_EVENT_CONNECT_REQUEST ? event->id : nullptr;
        ::rdma_ack_cm_event(event);
        if (request)
            ::rdma_destroy_id(request);
    }
}

void close_silent_listener(rdma_cm_id* listener) {
    drain_silent_listener(listener);
    rdma_event_channel* channel = listener->channel;
    ::rdma_destroy_id(listener);
    ::rdma_destroy_event_channel(channel);
}

/// An rdma_cm listener that never answers, so that a priming rconnect to it
/// is still in progress when it returns. Without one (port 0), the refusal
/// can come back over rxe's loopback before rconnect returns: under TCG,
/// after a few dozen starts every rconnect failed at once with
/// ECONNREFUSED, which left room for ~100 sockets.
rdma_cm_id* open_silent_listener(const sockaddr* where) {
    rdma_event_channel* channel = ::rdma_create_event_channel();
    if (!channel)
        return nullptr;
    rdma_cm_id* id = nullptr;
    if (::fcntl(channel->fd, F_SETFL, ::fcntl(channel->fd, F_GETFL) | O_NONBLOCK) != 0 ||
        ::rdma_create_id(channel, &id, nullptr, RDMA_PS_TCP) != 0) {
        ::rdma_destroy_event_channel(channel);
        return nullptr;
    }
    if (::rdma_bind_addr(id, const_cast<sockaddr*>(where)) != 0 || ::rdma_listen(id, 0) != 0) {
        close_silent_listener(id);
        return nullptr;
    }
    return id;
}

bool is_wildcard(const sockaddr* where) {
    return (where->sa_family == AF_INET &&
            reinterpret_cast<const sockaddr_in*>(where)->sin_addr.s_addr == htonl(INADDR_ANY)) ||
           (where->sa_family == AF_INET6 &&
            IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6*>(where)->sin6_addr));
}

/// Addresses to prime the connection service with: `where` itself, or for a
/// wildcard every local address of its family but loopback (rdma_cm cannot
/// use lo). Port 0: the silent listener binds an ephemeral port; without
/// one, no rsocket listener can take a priming request.
std::vector<sockaddr_storage> connect_candidates(const sockaddr* where, socklen_t len) {
    std::vector<sockaddr_storage> out;
    auto add = [&](const sockaddr* a, socklen_t n) {
        sockaddr_storage copy{};
        std::memcpy(&copy, a, n);
        set_port(copy, 0);
        out.push_back(copy);
    };
    if (!is_wildcard(where)) {
        add(where, len);
        return out;
    }
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0)
        return out;
    for (const ifaddrs* i = list; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != where->sa_family)
            continue;
        const bool loopback =
            (where->sa_family == AF_INET &&
             reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr ==
                 htonl(INADDR_LOOPBACK)) ||
            (where->sa_family == AF_INET6 &&
             IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(i->ifa_addr)->sin6_addr));
        if (!loopback)
            add(i->ifa_addr, where->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
    }
    ::freeifaddrs(list);
    return out;
}

std::size_t prime_connect_service(const sockaddr* where, socklen_t len, std::size_t starts) {
    for (auto candidate : connect_candidates(where, len)) {
        auto* a = reinterpret_cast<sockaddr*>(&candidate);
        rdma_cm_id* listener = open_silent_listener(a);
        if (listener)
            set_port(candidate, ::rdma_get_src_port(listener));
        const std::size_t done = cycle_until(
            starts, [&] { return cycle_connect_service(a, length_of(candidate)); },
            [&] {
                if (listener)
                    drain_silent_listener(listener);
            });
        if (listener)
            close_silent_listener(listener);
        if (done > 0)
            return done;
    }
    return 0;
}

// --- Priming the listen service ------------------------------------------
// One start and stop of its thread is an rlisten on an ephemeral port of
// the wildcard address (rdma_cm binds it without a device address), then
// its rclose.

bool cycle_listen_service(int family) {
    const int s = ::rsocket(family, SOCK_STREAM, 0);
    if (s < 0)
        return false;
    sockaddr_storage any{};
    any.ss_family = static_cast<sa_family_t>(family);
    std::lock_guard gate(listen_service_gate());
    const bool started =
        ::rbind(s, reinterpret_cast<sockaddr*>(&any), length_of(any)) == 0 && ::rlisten(s, 1) == 0;
    ::rclose(s);
    return started;
}

std::size_t prime_listen_service(const sockaddr* where, socklen_t, std::size_t starts) {
    const int family = where->sa_family;
    return cycle_until(starts, [family] { return cycle_listen_service(family); }, [] {});
}

// Keys of the priming jobs on the background closer: descriptor numbers,
// its other keys, are never negative.
constexpr int connection_priming_key = -1;
constexpr int listen_priming_key = -2;

// Never destroyed, like the iomap table: close() runs on the background
// closer's threads, which process exit does not stop.
//
// The connection service's room: CORIO_RSOCKET_CM_CAPACITY, else 256 (128
// streams with both ends in one process, 256 with one end). Each 4 of room
// cost a start of the thread before the first connection, about 20 ms under
// the guest's emulation: 1024 took 5 s there, which ate coriostream's whole
// --timeout 5 before its connect began.
service_thread_room& connection_room() {
    static auto* instance = new service_thread_room(
        "CORIO_RSOCKET_CM_CAPACITY", 256, prime_connect_service, error::rsocket_service_full,
        error::rsocket_cm_capacity_invalid, connection_priming_key);
    return *instance;
}

// The listen service's room: CORIO_RSOCKET_LISTEN_CAPACITY, else 64
// listening rsockets at once per process.
service_thread_room& listen_room() {
    static auto* instance =
        new service_thread_room("CORIO_RSOCKET_LISTEN_CAPACITY", 64, prime_listen_service,
                                error::rsocket_listen_service_full,
                                error::rsocket_listen_capacity_invalid, listen_priming_key);
    return *instance;
}

// Always inlined: every data call of the seam asks it first, and GCC kept
// it a call of its own, a call level more per transfer.
[[gnu::always_inline]] inline bool is_rsocket(int s, error_code& ec) noexcept {
    if (open_rsockets.contains(s)) [[likely]]
        return true;
    ec = boost::asio::error::bad_descriptor;
    return false;
}

int open(int domain, int type, int protocol, error_code& ec) {
    // rsocket() on v44 rejects SOCK_NONBLOCK with ENOTSUP, and newer versions
    // only record it without making rconnect nonblocking; rfcntl is the one
    // way that works everywhere. rsockets have no exec semantics to inherit,
    // so SOCK_CLOEXEC is dropped.
    const bool nonblocking = (type & SOCK_NONBLOCK) != 0;
    type &= ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
    const int s = ::rsocket(domain, type, protocol);
    if (s < 0) {
        ec = errno == ENODEV ? make_error_code(error::no_rdma_device) : last_error();
        return -1;
    }
    if (nonblocking && ::rfcntl(s, F_SETFL, O_NONBLOCK) < 0) {
        ec = last_error();
        ::rclose(s);
        return -1;
    }
    // Beyond what open_rsockets holds, no data call could tell it from a
    // stray number: refused rather than used unchecked.
    if (!open_rsockets.add(s)) {
        ::rclose(s);
        ec = boost::asio::error::no_descriptors;
        return -1;
    }
    if (type == SOCK_STREAM)
        connection_room().start_priming(domain);
    ec.clear();
    return s;
}

error_code bind(int s, const sockaddr* addr, socklen_t len) {
    return status_of(::rbind(s, addr, len));
}

error_code listen(int s, int backlog) {
    sockaddr_storage local{};
    socklen_t local_len = sizeof local;
    if (::rgetsockname(s, reinterpret_cast<sockaddr*>(&local), &local_len) != 0)
        return last_error();
    listen_room().start_priming(local.ss_family);
    if (const auto ec = listen_room().claim(reinterpret_cast<sockaddr*>(&local), local_len))
        return ec;
    error_code ec;
    {
        std::lock_guard gate(listen_service_gate());
        ec = status_of(::rlisten(s, backlog));
    }
    if (ec)
        listen_room().unclaim();
    else
        listen_room().watched(s);
    return ec;
}

int accept(int s, sockaddr* addr, socklen_t* len, error_code& ec) {
    sockaddr_storage local{};
    socklen_t local_len = sizeof local;
    if (::rgetsockname(s, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) {
        ec = last_error();
        return -1;
    }
    // An accept runs on the handler's executor: while the room is still
    // being primed it would block, so it comes back (try_again) and the
    // accept waits for its next retry instead.
    if ((ec = connection_room().claim(reinterpret_cast<sockaddr*>(&local), local_len,
                                      /*may_wait=*/false)))
        return -1;
    const int n = ::raccept(s, addr, len);
    ec = n < 0 ? last_error() : error_code{};
    if (n < 0) {
        connection_room().unclaim();
        return n;
    }
    connection_room().watched(n);
    if (!open_rsockets.add(n)) {
        (void)close(n);
        ec = boost::asio::error::no_descriptors;
        return -1;
    }
    return n;
}

error_code connect(int s, const sockaddr* addr, socklen_t len) {
    // A connect is started by its initiation on the caller's thread, often
    // an io_context's: while the room is primed or waits for closes, or
    // the listen service's gate is taken, it comes back (try_again) and the
    // operation retries on the service's tick (connect_operation), as
    // accept does.
    std::shared_lock gate(listen_service_gate(), std::try_to_lock);
    if (!gate.owns_lock())
        return boost::asio::error::try_again;
    if (const auto ec = connection_room().claim(addr, len, /*may_wait=*/false))
        return ec;
    const auto ec = status_of(::rconnect(s, addr, len));
    // Only a connect still in progress is handed to the service thread.
    if (ec == boost::asio::error::in_progress)
        connection_room().watched(s);
    else
        connection_room().unclaim();
    return ec;
}

error_code shutdown(int s, int how) { return status_of(::rshutdown(s, how)); }

error_code close(int s);

/// Takes and closes the connections a listening rsocket's service thread
/// has already accepted and queued for raccept. v44's rclose of a listener
/// frees it but not those: each would keep an rsocket (two descriptors,
/// its buffers and a connected queue pair, the peer none the wiser) for the
/// life of the process; the soak found them. One that the service thread
/// queues between the last raccept here and the rclose still escapes: v44
/// offers no way to stop that thread for one listener short of rclose.
void close_queued_connections(int s) {
    // A blocking raccept would wait for the next peer; corio's listeners
    // are nonblocking.
    const int flags = ::rfcntl(s, F_GETFL);
    if (flags < 0 || (flags & O_NONBLOCK) == 0)
        return;
    sockaddr_storage local{};
    socklen_t local_len = sizeof local;
    if (::rgetsockname(s, reinterpret_cast<sockaddr*>(&local), &local_len) != 0)
        return;
    for (;;) {
        // raccept hands each to the connection service: room first. This
        // runs in the background, so it may wait for the room.
        if (connection_room().claim(reinterpret_cast<sockaddr*>(&local), local_len))
            return;
        const int n = ::raccept(s, nullptr, nullptr);
        if (n < 0) {
            connection_room().unclaim();
            return;
        }
        connection_room().watched(n);
        (void)close(n);
    }
}

error_code close(int s) {
    // Before the rclose: once it returns, librdmacm may give the number to a
    // new rsocket, whose add must not be undone here.
    open_rsockets.remove(s);
    iomaps().unmap_all(s);
    const bool watched = connection_room().closing(s);
    const bool listening = listen_room().closing(s);
    if (listening || !CORIO_RDMACM_CM_SERVICE_GROWS_UNSAFELY)
        close_queued_connections(s);
    // Only a listener's rclose waits for the listen service (the gate's
    // comment above); other closes do not take the gate.
    std::unique_lock gate(listen_service_gate(), std::defer_lock);
    if (listening)
        gate.lock();
    const int result = ::rclose(s);
    if (gate.owns_lock())
        gate.unlock();
    if (watched)
        connection_room().closed();
    if (listening)
        listen_room().closed();
    // v44 returns a positive EBADF, not -1 with errno, for an fd it does not know.
    if (result > 0)
        return {result, boost::system::system_category()};
    return status_of(result);
}

std::size_t recv(int s, void* buf, std::size_t len, int flags, error_code& ec) {
    if (!is_rsocket(s, ec))
        return 0;
    return received_count(::rrecv(s, buf, len, flags), len > 0, ec);
}

std::size_t send(int s, const void* buf, std::size_t len, int flags, error_code& ec) {
    if (!is_rsocket(s, ec))
        return 0;
    return count_of(::rsend(s, buf, len, flags), ec);
}

// One buffer, the common case, goes to rrecv and rsend. v44's rreadv is
// rrecv of the first buffer anyway; its rwritev copies every byte into the
// send buffer, where rsend sends a message of up to the inline size straight
// from the caller's buffer, as rstream's rsend does.
std::size_t readv(int s, const iovec* iov, int iovcnt, error_code& ec) {
    if (!is_rsocket(s, ec))
        return 0;
    if (iovcnt == 1)
        return received_count(::rrecv(s, iov[0].iov_base, iov[0].iov_len, 0),
                              iov[0].iov_len > 0, ec);
    return received_count(::rreadv(s, iov, iovcnt), wants_bytes(iov, iovcnt), ec);
}

std::size_t writev(int s, const iovec* iov, int iovcnt, error_code& ec) {
    if (!is_rsocket(s, ec))
        return 0;
    if (iovcnt == 1)
        return count_of(::rsend(s, iov[0].iov_base, iov[0].iov_len, 0), ec);
    return count_of(::rwritev(s, iov, iovcnt), ec);
}

// rsocket(7) names MSG_DONTWAIT and MSG_PEEK; v44's rrecv acts on them (and
// MSG_WAITALL) and its rsendv on MSG_DONTWAIT only. Anything else, MSG_OOB
// among them, both calls ignore in silence, so it is refused here.
constexpr int rsocket_receive_flags = MSG_DONTWAIT | MSG_PEEK;
constexpr int rsocket_send_flags = MSG_DONTWAIT;

std::size_t recvmsg(int s, const iovec* iov, int iovcnt, int flags, error_code& ec) {
    if ((flags & ~rsocket_receive_flags) != 0) {
        ec = boost::asio::error::operation_not_supported;
        return 0;
    }
    if (!is_rsocket(s, ec))
        return 0;
    msghdr message{};
    message.msg_iov = const_cast<iovec*>(iov);
    message.msg_iovlen = static_cast<std::size_t>(iovcnt);
    // v44's rrecvmsg passes msg_flags, not its flags argument, to rrecvv.
    message.msg_flags = flags;
    return received_count(::rrecvmsg(s, &message, flags), wants_bytes(iov, iovcnt), ec);
}

std::size_t sendmsg(int s, const iovec* iov, int iovcnt, int flags, error_code& ec) {
    if ((flags & ~rsocket_send_flags) != 0) {
        ec = boost::asio::error::operation_not_supported;
        return 0;
    }
    if (!is_rsocket(s, ec))
        return 0;
    msghdr message{};
    message.msg_iov = const_cast<iovec*>(iov);
    message.msg_iovlen = static_cast<std::size_t>(iovcnt);
    return count_of(::rsendmsg(s, &message, flags), ec);
}

std::size_t poll(pollfd* fds, nfds_t nfds, poll_timeout timeout, error_code& ec) {
    // v44 to v62 leak an internal counter when a finite timeout expires, and
    // blocking rpolls spin from then on: poll_timeout lets only 0 and -1 here.
    return count_of(::rpoll(fds, nfds, static_cast<int>(timeout)), ec);
}

error_code setsockopt(int s, int level, int name, const void* value, socklen_t len) {
    return status_of(::rsetsockopt(s, level, name, value, len));
}

error_code getsockopt(int s, int level, int name, void* value, socklen_t* len) {
    return status_of(::rgetsockopt(s, level, name, value, len));
}

error_code set_nonblocking(int s, bool on) {
    const int flags = ::rfcntl(s, F_GETFL);
    if (flags < 0)
        return last_error();
    return status_of(::rfcntl(s, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK));
}

error_code getpeername(int s, sockaddr* addr, socklen_t* len) {
    return status_of(::rgetpeername(s, addr, len));
}

error_code getsockname(int s, sockaddr* addr, socklen_t* len) {
    return status_of(::rgetsockname(s, addr, len));
}

off_t iomap(int s, void* buf, std::size_t len, int prot, off_t offset, error_code& ec) {
    if (!is_rsocket(s, ec))
        return -1;
    const off_t mapped = ::riomap(s, buf, len, prot, 0, offset);
    if (mapped == -1) {
        ec = last_error();
        return -1;
    }
    ec.clear();
    iomaps().add(s, buf, len);
    return mapped;
}

error_code iounmap(int s, void* buf, std::size_t len) {
    if (error_code ec; !is_rsocket(s, ec))
        return ec;
    const auto ec = status_of(::riounmap(s, buf, len));
    if (!ec)
        iomaps().remove(s, buf, len);
    return ec;
}

std::size_t iowrite(int s, const void* buf, std::size_t count, off_t offset,
                    const remote_mapping& target, int flags, error_code& ec) {
    ec.clear();
    if (count == 0)
        return 0;
    // v44 loops forever when a write crosses a mapping's end: its "move to the
    // next mapping" test is `offset > end` where it needs `>=`, so the chunk
    // size becomes 0 at the boundary and never grows again.
    if (!target.contains(offset, count)) {
        ec = error::iowrite_out_of_bounds;
        return 0;
    }
    if (!is_rsocket(s, ec))
        return 0;
    const std::size_t written = ::riowrite(s, buf, count, offset, flags);
    // riowrite returns size_t but signals failure with (size_t)-1 and errno.
    if (written == static_cast<std::size_t>(-1)) {
        ec = last_error();
        return 0;
    }
    // 0 for a nonempty write, with errno untouched, means no mapping the peer
    // published covers the offset.
    if (written == 0)
        ec = error::no_remote_mapping;
    return written;
}

// A datagram rsocket holds each datagram in one 2048-byte slot
// (RS_SNDLOWAT), and v44 never checks a length against it:
// - the first datagram to a destination goes through the rsocket's UDP side
//   channel with a 16-byte header (28 for IPv6); the receiving service
//   thread reads it into a 2048-byte buffer, so a longer one loses its tail
//   without an error;
// - later ones are copied after an 8-byte header (24 for IPv6) into the send
//   slot with no bound at all: a longer one overruns the slot.
// So the seam refuses anything longer than the smaller of the two limits.
// (The device's path MTU also bounds a UD message: 4096 bytes with the
// guest's MTU of 9000, 1024 with an MTU of 1500, where the first limit is
// the MTU's.)
constexpr std::size_t datagram_slot = 2048;

// A datagram rsocket makes its UD queue pair, and an address handle to that
// queue pair itself, at its first connect or send. v44 makes that handle
// with a LID and no GRH, which every RoCE port refuses (EINVAL); the error
// path then removes the completion channel from an epoll set it never
// joined, and it is that ENOENT which rsockets report. Nothing else in that
// path gives ENOENT once the rsocket exists (without an RDMA device,
// rsocket() fails first), so it is named for what it is.
error_code datagram_error(error_code ec) {
    if (ec == boost::system::errc::no_such_file_or_directory)
        return error::rsocket_datagram_unaddressable;
    return ec;
}

// rconnect on a datagram rsocket only records the peer: it never joins the
// connection service, so no room is claimed there.
error_code connect_datagram(int s, const sockaddr* addr, socklen_t len) {
    return datagram_error(status_of(::rconnect(s, addr, len)));
}

std::size_t max_datagram(int family) {
    return datagram_slot - (family == AF_INET6 ? 28 : 16);
}

// rsendmsg and rrecvmsg drop msg_name and take the stream path in v44, and
// rsendto/rrecvfrom take one buffer: several buffers go through a bounce
// buffer of one slot, which holds any datagram max_datagram lets through.
std::size_t sendto(int s, const iovec* iov, int iovcnt, const sockaddr* to, socklen_t to_len,
                   error_code& ec) {
    if (!is_rsocket(s, ec))
        return 0;
    unsigned char bounce[datagram_slot];
    const void* data = iovcnt > 0 ? iov[0].iov_base : bounce;
    std::size_t len = iovcnt > 0 ? iov[0].iov_len : 0;
    if (iovcnt > 1) {
        len = 0;
        for (int i = 0; i < iovcnt; ++i) {
            if (len + iov[i].iov_len > sizeof bounce) {
                ec = boost::asio::error::message_size;
                return 0;
            }
            std::memcpy(bounce + len, iov[i].iov_base, iov[i].iov_len);
            len += iov[i].iov_len;
        }
        data = bounce;
    }
    const std::size_t n = count_of(::rsendto(s, data, len, 0, to, to ? to_len : 0), ec);
    ec = datagram_error(ec);
    return n;
}

std::size_t recvfrom(int s, const iovec* iov, int iovcnt, sockaddr* from, socklen_t* from_len,
                     error_code& ec) {
    if (!is_rsocket(s, ec))
        return 0;
    if (iovcnt == 1)
        return count_of(::rrecvfrom(s, iov[0].iov_base, iov[0].iov_len, 0, from, from_len), ec);
    unsigned char bounce[datagram_slot];
    const std::size_t n = count_of(::rrecvfrom(s, bounce, sizeof bounce, 0, from, from_len), ec);
    std::size_t copied = 0;
    for (int i = 0; i < iovcnt && copied < n; ++i) {
        const std::size_t part = std::min(iov[i].iov_len, n - copied);
        std::memcpy(iov[i].iov_base, bounce + copied, part);
        copied += part;
    }
    return copied;
}

// rsockets have no FIONREAD: a peek, which v44 serves from the receive
// buffer without consuming it, counts what is there, up to the socket's
// receive buffer size. It copies those bytes, so it costs about what the
// read it stands in for would: available() is not for the data path.
std::size_t available(int s, error_code& ec) {
    if (!is_rsocket(s, ec))
        return 0;
    int size = 0;
    socklen_t len = sizeof size;
    if ((ec = getsockopt(s, SOL_SOCKET, SO_RCVBUF, &size, &len)))
        return 0;
    thread_local std::vector<char> scratch;
    scratch.resize(static_cast<std::size_t>(std::max(size, 1)));
    const std::size_t n = received_count(
        ::rrecv(s, scratch.data(), scratch.size(), MSG_PEEK | MSG_DONTWAIT), true, ec);
    // Nothing buffered, or the peer's orderly end: nothing to read now.
    if (ec == boost::asio::error::would_block || ec == boost::asio::error::try_again ||
        ec == boost::asio::error::eof)
        ec.clear();
    return n;
}

} // namespace

const socket_ops rsocket_ops = {
    .name = "rsocket",
    .open = open,
    .bind = bind,
    .listen = listen,
    .accept = accept,
    .connect = connect,
    .shutdown = shutdown,
    .close = close,
    .recv = recv,
    .send = send,
    .readv = readv,
    .writev = writev,
    .recvmsg = recvmsg,
    .sendmsg = sendmsg,
    .poll = poll,
    .setsockopt = setsockopt,
    .getsockopt = getsockopt,
    .set_nonblocking = set_nonblocking,
    .getpeername = getpeername,
    .getsockname = getsockname,
    .iomap = iomap,
    .iounmap = iounmap,
    .iowrite = iowrite,
    .connect_datagram = connect_datagram,
    .sendto = sendto,
    .recvfrom = recvfrom,
    .max_datagram = max_datagram,
    .available = available,
};

} // namespace corio::detail
