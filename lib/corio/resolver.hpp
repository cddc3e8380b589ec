#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_state.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/ip/basic_resolver.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/query.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

#include <corio/detail/rdma_cm_lookup.hpp>
#include <corio/detail/rdma_cm_lookup_service.hpp>

namespace corio {

/// How a host is written, as riostream's `-f` option says it.
enum class address_format {
    /// A name or an address of any family, looked up as getaddrinfo does.
    name,
    /// A numeric IPv4 address only; names are refused without a lookup.
    ip,
    /// A numeric IPv6 address only.
    ipv6,
    /// An InfiniBand GID, which only resolve_method::rdma_getaddrinfo
    /// reads (with getaddrinfo a lookup completes with
    /// boost::asio::error::operation_not_supported). rdma_getaddrinfo makes it
    /// an AF_IB address, which no corio endpoint holds: the lookup completes
    /// with corio::error::ib_address_unsupported.
    gid,
};

/// The lookup a resolver runs.
enum class resolve_method {
    /// getaddrinfo, on Asio's resolver thread (riostream's lookup).
    getaddrinfo,
    /// librdmacm's rdma_getaddrinfo (rstream's `-T r`, riostream's `-f gid`),
    /// on a thread of corio's per execution context: getaddrinfo underneath
    /// for IP hosts, with the TCP port space. It needs an RDMA device:
    /// without one every lookup fails with ENODEV (which matches
    /// corio::condition::no_rdma_device).
    rdma_getaddrinfo,
};

/// What a lookup takes a host to be and how it looks it up. An
/// address_format converts to one that uses getaddrinfo, so
/// `resolve(host, port, address_format::ip)` and
/// `resolve(host, port, {address_format::ip, resolve_method::rdma_getaddrinfo})`
/// both read.
struct resolve_query {
    /// A query in `f`, looked up with getaddrinfo.
    resolve_query(address_format f) : format(f) {} // NOLINT: converts on purpose
    /// A query in `f`, looked up with `m`.
    resolve_query(address_format f, resolve_method m) : format(f), method(m) {}

    /// How the host is written.
    address_format format;
    /// Which lookup runs.
    resolve_method method = resolve_method::getaddrinfo;
};

namespace detail {

/// getaddrinfo's hints for one address_format.
struct resolve_hints {
    /// The family to ask for; empty asks for any.
    std::optional<boost::asio::ip::tcp> protocol;
    boost::asio::ip::resolver_base::flags flags{};
};

/// The hints for `format`; for a format that cannot be resolved (gid), sets
/// `ec` to operation_not_supported.
resolve_hints hints_for(address_format format, bool passive, boost::system::error_code& ec);

std::vector<boost::asio::ip::tcp::endpoint>
endpoints_of(const boost::asio::ip::basic_resolver_results<boost::asio::ip::tcp>& results);

} // namespace detail

/// Looks up TCP endpoints without blocking the calling thread, over
/// boost::asio::ip::tcp::resolver, which runs getaddrinfo on a private thread.
/// The results are plain endpoints, ready for a corio stream's connect or an
/// acceptor's bind on either transport.
///
/// Client and server lookups differ only for an empty host, as in getaddrinfo:
/// `async_resolve` with an empty host yields the loopback address, while
/// `async_resolve_passive` yields the wildcard address a server binds to
/// listen on every interface (what riostream's server does without `-b`).
/// With a nonempty host the two are the same.
///
/// @par Thread Safety
/// Distinct objects: safe. Shared objects: unsafe. Emit a cancellation signal
/// bound to one of this resolver's operations only where calling cancel()
/// would be safe, that is not concurrently with other calls on this resolver.
template <class Executor>
class basic_resolver {
public:
    /// The executor the resolver's operations complete on by default.
    using executor_type = Executor;
    /// What a lookup yields: TCP endpoints, for either transport.
    using endpoint_type = boost::asio::ip::tcp::endpoint;
    /// The endpoints of one lookup, in getaddrinfo's order.
    using results_type = std::vector<endpoint_type>;

    /// The resolver type for another executor, as Asio's I/O objects offer.
    template <class OtherExecutor>
    struct rebind_executor {
        /// basic_resolver on OtherExecutor.
        using other = basic_resolver<OtherExecutor>;
    };

    /// A resolver whose operations complete on `ex`.
    explicit basic_resolver(const executor_type& ex) : state_(std::make_shared<state>(ex)) {}

    /// A resolver on `context`'s executor.
    template <class ExecutionContext>
        requires std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>
    explicit basic_resolver(ExecutionContext& context)
        : state_(std::make_shared<state>(context)) {}

    basic_resolver(const basic_resolver&) = delete;
    basic_resolver& operator=(const basic_resolver&) = delete;

    /// A moved-from resolver may only be destroyed or assigned to.
    basic_resolver(basic_resolver&& other) noexcept = default;

    /// Cancels this resolver's outstanding lookups (operation_aborted), then takes over `other`'s.
    basic_resolver& operator=(basic_resolver&& other) noexcept {
        if (this != &other) {
            abort_outstanding();
            state_ = std::move(other.state_);
        }
        return *this;
    }

    /// Outstanding operations complete with operation_aborted, as with cancel().
    ~basic_resolver() { abort_outstanding(); }

    /// The executor given at construction.
    executor_type get_executor() const noexcept { return state_->resolver.get_executor(); }

    /// Completes every outstanding async_resolve and async_resolve_passive
    /// with boost::asio::error::operation_aborted, including those whose
    /// lookup has already finished but whose handler has not yet run.
    /// getaddrinfo itself cannot be interrupted: one already running goes on
    /// to its end on the private thread, and its result is discarded.
    void cancel() { abort_outstanding(); }

    /// Looks up `host` and `service` (a port number or a name from
    /// /etc/services) on the calling thread, blocking it. Throws
    /// boost::system::system_error on failure; on success the vector is not
    /// empty.
    results_type resolve(std::string_view host, std::string_view service, resolve_query query) {
        boost::system::error_code ec;
        auto endpoints = resolve(host, service, query, ec);
        if (ec)
            throw boost::system::system_error(ec, "resolve");
        return endpoints;
    }

    /// As the overload above, but reports a failure in `ec` instead of throwing.
    results_type resolve(std::string_view host, std::string_view service, resolve_query query,
                         boost::system::error_code& ec) {
        return resolve_now(host, service, query, false, ec);
    }

    /// As resolve, but an empty host yields the wildcard address to bind.
    results_type resolve_passive(std::string_view host, std::string_view service,
                                 resolve_query query) {
        boost::system::error_code ec;
        auto endpoints = resolve_passive(host, service, query, ec);
        if (ec)
            throw boost::system::system_error(ec, "resolve");
        return endpoints;
    }

    /// As the overload above, but reports a failure in `ec` instead of throwing.
    results_type resolve_passive(std::string_view host, std::string_view service,
                                 resolve_query query, boost::system::error_code& ec) {
        return resolve_now(host, service, query, true, ec);
    }

    /// Starts looking up `host` and `service` as `query` says, for a client:
    /// an empty host means the loopback address. Name lookups ask for every
    /// family (AF_UNSPEC, without AI_ADDRCONFIG, as riostream does); `ip` and
    /// `ipv6` take only a numeric address of their family (AI_NUMERICHOST)
    /// and refuse anything else with an error rather than a lookup. Both
    /// strings are copied before this returns. With
    /// resolve_method::rdma_getaddrinfo the lookup is librdmacm's, with the
    /// hints riostream and rstream give it; it yields one endpoint (the
    /// first address getaddrinfo finds, as librdmacm keeps only that).
    ///
    /// On success the vector holds at least one endpoint, in getaddrinfo's
    /// order. Errors are those of boost::asio::ip::tcp::resolver (for example
    /// boost::asio::error::host_not_found or service_not_found), also with
    /// rdma_getaddrinfo, plus operation_not_supported for address_format::gid
    /// with getaddrinfo, corio::error::ib_address_unsupported for it with
    /// rdma_getaddrinfo, ENODEV from rdma_getaddrinfo without an RDMA
    /// device, and operation_aborted after cancellation. The handler is never
    /// invoked from within this function.
    ///
    /// @par Completion Signature
    /// @code void(boost::system::error_code, std::vector<boost::asio::ip::tcp::endpoint>) @endcode
    ///
    /// @par Per-Operation Cancellation
    /// Supports the terminal, partial and total cancellation types: a lookup
    /// has no side effect to undo. Once the bound signal is emitted, the
    /// operation completes with operation_aborted and no endpoints, even if
    /// getaddrinfo has already answered. A lookup not yet begun is dropped at
    /// once (with rdma_getaddrinfo: when its turn on the lookup thread comes,
    /// without running); one already inside the lookup cannot be
    /// interrupted, so the handler runs when it returns. Other operations of
    /// this resolver are not affected.
    template <boost::asio::completion_token_for<void(boost::system::error_code, results_type)>
                  Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_resolve(std::string_view host, std::string_view service, resolve_query query,
                       Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code, results_type)>(
            initiate_async_resolve(state_), token, std::string(host), std::string(service),
            query, false);
    }

    /// As async_resolve, for a server: an empty host means the wildcard
    /// address (AI_PASSIVE). Under `name` that is every family's wildcard
    /// getaddrinfo offers, under `ip` 0.0.0.0 and under `ipv6` ::. A nonempty
    /// host names the local address to bind, exactly as in async_resolve.
    ///
    /// @par Completion Signature
    /// @code void(boost::system::error_code, std::vector<boost::asio::ip::tcp::endpoint>) @endcode
    ///
    /// @par Per-Operation Cancellation
    /// As for async_resolve.
    template <boost::asio::completion_token_for<void(boost::system::error_code, results_type)>
                  Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_resolve_passive(std::string_view host, std::string_view service,
                               resolve_query query, Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code, results_type)>(
            initiate_async_resolve(state_), token, std::string(host), std::string(service),
            query, true);
    }

private:
    using inner_resolver = boost::asio::ip::basic_resolver<boost::asio::ip::tcp, Executor>;
    using inner_results = typename inner_resolver::results_type;

    // Shared with the outstanding operations, so that they can still tell,
    // when they complete, whether the resolver was cancelled or destroyed
    // meanwhile.
    struct state {
        template <class ExecutorOrContext>
        explicit state(ExecutorOrContext&& e) : resolver(std::forward<ExecutorOrContext>(e)) {}

        inner_resolver resolver;
        // Bumped by every cancel(). tcp::resolver::cancel() also aborts the
        // lookups of all operations not yet started, so an operation needs
        // to know whether an abort was meant for it; the count is atomic
        // because operations read it on their handlers' executors.
        std::atomic<std::uint64_t> cancellations{0};
    };

    void abort_outstanding() {
        if (!state_)
            return;
        ++state_->cancellations;
        state_->resolver.cancel();
    }

    results_type resolve_now(std::string_view host, std::string_view service,
                             resolve_query query, bool passive, boost::system::error_code& ec) {
        if (query.method == resolve_method::rdma_getaddrinfo)
            return detail::rdma_cm_lookup(std::string(host), std::string(service), query.format,
                                          passive, ec);
        const auto hints = detail::hints_for(query.format, passive, ec);
        if (ec)
            return {};
        const auto results =
            hints.protocol
                ? state_->resolver.resolve(*hints.protocol, host, service, hints.flags, ec)
                : state_->resolver.resolve(host, service, hints.flags, ec);
        return ec ? results_type{} : detail::endpoints_of(results);
    }

    // The composed operation behind both async_resolve functions.
    class resolve_op {
    public:
        resolve_op(std::shared_ptr<state> s, std::string host, std::string service,
                   resolve_query query, bool passive)
            : state_(std::move(s)), host_(std::move(host)), service_(std::move(service)),
              query_(query), passive_(passive) {}

        template <class Self>
        void operator()(Self& self) {
            if (query_.method == resolve_method::rdma_getaddrinfo) {
                generation_ = state_->cancellations.load();
                self.reset_cancellation_state(boost::asio::enable_total_cancellation());
                start_rdma_cm(self);
                return;
            }
            boost::system::error_code ec;
            hints_ = detail::hints_for(query_.format, passive_, ec);
            if (ec) {
                // Through post: a handler must not run inside the initiating
                // function. The executor is taken first because moving `self`
                // moves this object too.
                const auto ex = state_->resolver.get_executor();
                boost::asio::post(ex, boost::asio::append(std::move(self), ec));
                return;
            }
            generation_ = state_->cancellations.load();
            self.reset_cancellation_state(boost::asio::enable_total_cancellation());
            start(self);
        }

        // Completion of an operation refused before any lookup.
        template <class Self>
        void operator()(Self& self, boost::system::error_code ec) {
            self.complete(ec, results_type{});
        }

        // Completion of an rdma_getaddrinfo lookup, back on the handler's
        // executor.
        template <class Self>
        void operator()(Self& self, boost::system::error_code ec, results_type results) {
            if (self.cancelled() != boost::asio::cancellation_type::none ||
                state_->cancellations.load() != generation_) {
                self.complete(boost::asio::error::operation_aborted, results_type{});
                return;
            }
            self.complete(ec, ec ? results_type{} : std::move(results));
        }

        template <class Self>
        void operator()(Self& self, boost::system::error_code ec, inner_results results) {
            // Cancellation wins over any answer, so that a cancelled lookup
            // reports operation_aborted however the race with getaddrinfo went.
            if (self.cancelled() != boost::asio::cancellation_type::none ||
                state_->cancellations.load() != generation_) {
                self.complete(boost::asio::error::operation_aborted, results_type{});
                return;
            }
            if (ec == boost::asio::error::operation_aborted) {
                // Another operation's per-operation cancellation went through
                // the shared tcp::resolver and took this lookup with it; no
                // one asked this one to stop, so it asks again.
                start(self);
                return;
            }
            self.complete(ec, ec ? results_type{} : detail::endpoints_of(results));
        }

    private:
        // The lookup blocks, so it runs on the context's lookup thread, which
        // posts the result back through the handler's executor. A
        // cancellation cannot reach into rdma_getaddrinfo; the flag only
        // keeps a lookup that has not begun from running.
        template <class Self>
        void start_rdma_cm(Self& self) {
            auto cancelled = std::make_shared<std::atomic<bool>>(false);
            if (auto slot = self.get_cancellation_state().slot(); slot.is_connected())
                slot.assign([cancelled](boost::asio::cancellation_type) { cancelled->store(true); });
            auto& lookups = boost::asio::use_service<detail::rdma_cm_lookup_service>(
                boost::asio::query(state_->resolver.get_executor(),
                                   boost::asio::execution::context));
            // Copies first: moving `self` moves this object too.
            auto job = [s = state_, generation = generation_, host = host_, service = service_,
                        format = query_.format, passive = passive_, cancelled,
                        self = std::move(self)]() mutable {
                boost::system::error_code ec = boost::asio::error::operation_aborted;
                results_type found;
                if (!cancelled->load() && s->cancellations.load() == generation)
                    found = detail::rdma_cm_lookup(host, service, format, passive, ec);
                boost::asio::post(boost::asio::append(std::move(self), ec, std::move(found)));
            };
            lookups.run(std::move(job));
        }

        template <class Self>
        void start(Self& self) {
            // composed_op clears the slot before every step, so it is armed
            // again for each lookup.
            if (auto slot = self.get_cancellation_state().slot(); slot.is_connected()) {
                slot.assign([s = state_](boost::asio::cancellation_type) { s->resolver.cancel(); });
            }
            // Copies, because the lookup takes `self`, and with it this
            // object and its members, while its arguments are still in use.
            const auto s = state_;
            const std::string host = host_;
            const std::string service = service_;
            const auto hints = hints_;
            if (hints.protocol)
                s->resolver.async_resolve(*hints.protocol, host, service, hints.flags,
                                          std::move(self));
            else
                s->resolver.async_resolve(host, service, hints.flags, std::move(self));
        }

        std::shared_ptr<state> state_;
        std::string host_;
        std::string service_;
        resolve_query query_;
        bool passive_;
        detail::resolve_hints hints_;
        std::uint64_t generation_ = 0;
    };

    class initiate_async_resolve {
    public:
        using executor_type = Executor;

        explicit initiate_async_resolve(std::shared_ptr<state> s) : state_(std::move(s)) {}

        executor_type get_executor() const noexcept { return state_->resolver.get_executor(); }

        template <class Handler>
        void operator()(Handler&& handler, std::string host, std::string service,
                        resolve_query query, bool passive) const {
            boost::asio::async_compose<Handler, void(boost::system::error_code, results_type)>(
                resolve_op(state_, std::move(host), std::move(service), query, passive),
                handler, state_->resolver);
        }

    private:
        std::shared_ptr<state> state_;
    };

    std::shared_ptr<state> state_;
};

/// The resolver for the common case, on any I/O executor.
using resolver = basic_resolver<boost::asio::any_io_executor>;

} // namespace corio
