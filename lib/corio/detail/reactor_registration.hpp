#pragma once

// io_context.hpp first: detail/reactor.hpp alone leaves the scheduler's
// inline implementation without the reactor's declaration.
#include <boost/asio/io_context.hpp>
#include <boost/asio/detail/reactor.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>
#include <boost/version.hpp>

#include <corio/detail/reactor_wait_op.hpp>
#include <corio/detail/rpoll_operation.hpp>

// The reactor's start_op gained immediate-completion arguments in Boost 1.84;
// corio is built against Debian 12's 1.81.
static_assert(BOOST_VERSION < 108400,
              "reactor_registration calls epoll_reactor::start_op as Boost 1.81 declares it");

namespace corio::detail {

/// A kernel socket's descriptor registered with its io_context's own reactor,
/// as Asio registers its own sockets (edge-triggered, once), for
/// reactor_wait_op waits. Never closes the descriptor: it is deregistered
/// before its owner closes it, so the reactor never holds a number that may
/// be reused.
///
/// Thread safety: as Asio's descriptor services, the reactor's own locks
/// make each call safe against the reactor thread; calls on one registration
/// are serialised by the caller (rpoll_service's mutex).
class reactor_registration {
public:
    /// Throws system_error when the reactor refuses `fd`.
    reactor_registration(boost::asio::io_context& context, int fd)
        : reactor_(boost::asio::use_service<boost::asio::detail::reactor>(context)), fd_(fd) {
        reactor_.init_task();
        if (int err = reactor_.register_descriptor(fd_, data_)) {
            reactor_.cleanup_descriptor_data(data_);
            throw boost::system::system_error(err, boost::system::system_category(),
                                              "reactor registration");
        }
    }
    ~reactor_registration() { deregister(); }

    reactor_registration(const reactor_registration&) = delete;
    reactor_registration& operator=(const reactor_registration&) = delete;

    /// Starts `op`'s wait, made ready with reactor_wait_op::prepare; only
    /// one wait per kind at a time.
    ///
    /// A `may_end_early` wait starts without a system call, and may end when
    /// the descriptor is not ready (reactor_wait_op says when, and why that
    /// misses nothing): only for operations whose call says "would block"
    /// when it is not (reads, writes). Otherwise (a connect, whose
    /// completion reads SO_ERROR; an accept; an error wait) the descriptor
    /// is re-armed with epoll_ctl, as Asio's async_wait does, and the wait
    /// ends only on an event.
    void start_wait(reactor_wait_op& op, wait_kind kind, bool may_end_early) {
        using boost::asio::detail::reactor;
        const int op_type = kind == wait_kind::read    ? reactor::read_op
                            : kind == wait_kind::write ? reactor::write_op
                                                       : reactor::except_op;
        // starting_ brackets start_op, where an early end performs the wait
        // on this thread (reactor_wait_op::perform_wait).
        op.starting_.store(true, std::memory_order_relaxed);
        reactor_.start_op(op_type, fd_, data_, &op, false, may_end_early);
        op.starting_.store(false, std::memory_order_relaxed);
    }

    /// Ends every pending wait with operation_aborted.
    void cancel() noexcept { reactor_.cancel_ops(fd_, data_); }

    /// Ends every pending wait with operation_aborted and lets go of the
    /// descriptor (it stays open). Idempotent.
    void deregister() noexcept {
        reactor_.deregister_descriptor(fd_, data_, false);
        reactor_.cleanup_descriptor_data(data_);
    }

private:
    boost::asio::detail::reactor& reactor_;
    const int fd_;
    boost::asio::detail::reactor::per_descriptor_data data_{};
};

} // namespace corio::detail
