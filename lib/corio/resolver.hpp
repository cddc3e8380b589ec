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
#include <boost/asio/execution_context.hpp>
#include <boost/asio/ip/basic_resolver.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

namespace corio {

/// How a host is written, as riostream's `-f` option says it.
enum class address_format {
    /// A name or an address of any family, looked up as getaddrinfo does.
    name,
    /// A numeric IPv4 address only; names are refused without a lookup.
    ip,
    /// A numeric IPv6 address only.
    ipv6,
    /// An InfiniBand GID. Not supported yet: it needs rdma_getaddrinfo, and
    /// every resolve completes with boost::asio::error::operation_not_supported.
    gid,
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
    results_type resolve(std::string_view host, std::string_view service, address_format format) {
        boost::system::error_code ec;
        auto endpoints = resolve(host, service, format, ec);
        if (ec)
            throw boost::system::system_error(ec, "resolve");
        return endpoints;
    }

    /// As the overload above, but reports a failure in `ec` instead of throwing.
    results_type resolve(std::string_view host, std::string_view service, address_format format,
                         boost::system::error_code& ec) {
        return resolve_now(host, service, format, false, ec);
    }

    /// As resolve, but an empty host yields the wildcard address to bind.
    results_type resolve_passive(std::string_view host, std::string_view service,
                                 address_format format) {
        boost::system::error_code ec;
        auto endpoints = resolve_passive(host, service, format, ec);
        if (ec)
            throw boost::system::system_error(ec, "resolve");
        return endpoints;
    }

    /// As the overload above, but reports a failure in `ec` instead of throwing.
    results_type resolve_passive(std::string_view host, std::string_view service,
                                 address_format format, boost::system::error_code& ec) {
        return resolve_now(host, service, format, true, ec);
    }

    /// Starts looking up `host` and `service` as `format` says, for a client:
    /// an empty host means the loopback address. Name lookups ask for every
    /// family (AF_UNSPEC, without AI_ADDRCONFIG, as riostream does); `ip` and
    /// `ipv6` take only a numeric address of their family (AI_NUMERICHOST)
    /// and refuse anything else with an error rather than a lookup. Both
    /// strings are copied before this returns.
    ///
    /// On success the vector holds at least one endpoint, in getaddrinfo's
    /// order. Errors are those of boost::asio::ip::tcp::resolver (for example
    /// boost::asio::error::host_not_found or service_not_found), plus
    /// operation_not_supported for address_format::gid and operation_aborted
    /// after cancellation. The handler is never invoked from within this
    /// function.
    ///
    /// @par Completion Signature
    /// @code void(boost::system::error_code, std::vector<boost::asio::ip::tcp::endpoint>) @endcode
    ///
    /// @par Per-Operation Cancellation
    /// Supports the terminal, partial and total cancellation types: a lookup
    /// has no side effect to undo. Once the bound signal is emitted, the
    /// operation completes with operation_aborted and no endpoints, even if
    /// getaddrinfo has already answered. A lookup not yet begun is dropped at
    /// once; one already inside getaddrinfo cannot be interrupted, so the
    /// handler runs when it returns. Other operations of this resolver are
    /// not affected.
    template <boost::asio::completion_token_for<void(boost::system::error_code, results_type)>
                  Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_resolve(std::string_view host, std::string_view service, address_format format,
                       Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code, results_type)>(
            initiate_async_resolve(state_), token, std::string(host), std::string(service),
            format, false);
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
                               address_format format, Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code, results_type)>(
            initiate_async_resolve(state_), token, std::string(host), std::string(service),
            format, true);
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
                             address_format format, bool passive, boost::system::error_code& ec) {
        const auto hints = detail::hints_for(format, passive, ec);
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
                   address_format format, bool passive)
            : state_(std::move(s)), host_(std::move(host)), service_(std::move(service)),
              format_(format), passive_(passive) {}

        template <class Self>
        void operator()(Self& self) {
            boost::system::error_code ec;
            hints_ = detail::hints_for(format_, passive_, ec);
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
        address_format format_;
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
                        address_format format, bool passive) const {
            boost::asio::async_compose<Handler, void(boost::system::error_code, results_type)>(
                resolve_op(state_, std::move(host), std::move(service), format, passive),
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
