#include "corio/rpoll_service.hpp"

#include <cerrno>
#include <utility>

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/system/system_error.hpp>

// The service's lifecycle and registry: construction, shutdown (which must
// destroy, not run, the handlers it holds), the poll mode, and the state
// behind each I/O object. The poll loop, the watch bookkeeping, the reactor
// bridge, the operation state machine and closing live in the other
// rpoll_service_*.cpp files, each with the races it resolves.

namespace corio {

using detail::rpoll_operation;
using detail::socket_impl;
using detail::wait_kind;

boost::asio::execution_context::id rpoll_service::id;

rpoll_service::rpoll_service(boost::asio::execution_context& context)
    : rpoll_service(context, nullptr) {}

rpoll_service::rpoll_service(boost::asio::io_context& context)
    : rpoll_service(context, &context) {}

rpoll_service::rpoll_service(boost::asio::execution_context& context,
                             boost::asio::io_context* io_context)
    : boost::asio::execution_context::service(context) {
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    tick_fd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    const auto fail = [this] {
        const boost::system::error_code ec(errno, boost::system::system_category());
        for (const int fd : {wake_fd_, tick_fd_, epoll_fd_})
            if (fd >= 0)
                ::close(fd);
        throw boost::system::system_error(ec, "rpoll_service");
    };
    if (wake_fd_ < 0 || tick_fd_ < 0 || epoll_fd_ < 0)
        fail();
    io_context_ = io_context;
    if (io_context)
        scheduler_ = &boost::asio::use_service<boost::asio::detail::io_context_impl>(*io_context);
    if (!add_wake_to_epoll())
        fail();
    anchor_ = std::make_shared<background_anchor>();
    anchor_->service = this;
}

rpoll_service::~rpoll_service() {
    {
        // Background shutdown jobs still running touch nothing of this
        // service from now on.
        std::lock_guard anchor_lock(anchor_->mutex);
        anchor_->service = nullptr;
    }
    shutdown();
    ::close(wake_fd_);
    ::close(tick_fd_);
    ::close(epoll_fd_);
}

void rpoll_service::shutdown() {
    std::unique_lock lock(mutex_);
    stopping_ = true;
    wake_poller(lock);
    std::thread poller = std::move(poller_);
    // Pending reactor waits end (or, if the reactor is already shut down, are
    // destroyed with the io_context's queues); the descriptors stay open
    // until their I/O objects close them.
    for (auto& [id, impl] : impls_)
        release_reactor(*impl);
    lock.unlock();
    // No new watcher from here on (stopping_); the one there would end
    // operations this shutdown destroys.
    stop_stall_watcher();
    if (poller.joinable())
        poller.join();

    // Asio requires a service to destroy, not invoke, the handlers it holds
    // at shutdown. Destroying one may destroy a coroutine frame and with it an
    // I/O object that calls back into this service, so collect under the
    // lock and destroy outside it.
    std::vector<rpoll_operation*> pending;
    lock.lock();
    for (auto& [id, impl] : impls_) {
        for (auto* queue : impl->queues()) {
            pending.insert(pending.end(), queue->ops.begin(), queue->ops.end());
            queue->ops.clear();
            queue_changed(*impl, *queue);
        }
    }
    auto thread_closes = std::move(deferred_closes_[0]);
    auto busy_closes = std::move(deferred_closes_[1]);
    lock.unlock();
    for (auto* op : pending)
        op->destroy();
    for (auto* closes : {&thread_closes, &busy_closes})
        for (auto& socket : *closes)
            (void)dispose(std::move(socket));

}

void rpoll_service::set_mode(poll_mode mode, const boost::asio::any_io_executor& busy_executor) {
    // Validated before anything changes: a refused switch leaves the mode,
    // the executor and every queued wait as they were.
    if (mode == poll_mode::busy && !busy_executor)
        throw boost::system::system_error(boost::asio::error::invalid_argument,
                                          "corio: busy polling needs an executor");
    std::unique_lock lock(mutex_);
    mode_ = mode;
    busy_executor_ = busy_executor;
    const auto* io_executor = busy_executor_.target<boost::asio::io_context::executor_type>();
    busy_scheduler_ = io_executor ? own_scheduler(io_executor->context()) : nullptr;
    spin_.set_enabled(mode == poll_mode::thread);
    // The waits already queued move to the new mode's poller.
    on_wait_changed(lock);
    wake_poller(lock);
}

poll_mode rpoll_service::mode() const {
    std::lock_guard lock(mutex_);
    return mode_;
}

std::shared_ptr<socket_impl> rpoll_service::create_impl() {
    std::lock_guard lock(mutex_);
    auto impl = std::make_shared<socket_impl>(next_id_++);
    impls_.emplace(impl->id_, impl.get());
    return impl;
}

void rpoll_service::release_impl(socket_impl& impl) noexcept {
    (void)close(impl);
    std::lock_guard lock(mutex_);
    impls_.erase(impl.id_);
}

void rpoll_service::attach(socket_impl& impl, detail::unique_socket socket, transport t,
                           socket_impl::phase phase) {
    // Both locks, io_mutex_ first, as close() takes them: a close on
    // another thread comes wholly before or wholly after this, never with
    // the descriptor of one and the closed_ of the other.
    std::lock_guard io_lock(impl.io_mutex_);
    impl.socket_ = std::move(socket);
    // A new socket starts in blocking mode, as Asio's do.
    impl.non_blocking_ = false;
    impl.spin_histories_ = {};
    impl.transport_ = t;
    impl.phase_ = phase;
    std::lock_guard lock(mutex_);
    impl.closed_ = false;
    impl.retry_accept_ = false;
    impl.retry_connect_ = false;
    // A stall timeout belongs to one connection.
    if (auto* stall = impl.stall_.load())
        stall->reset();
}

bool rpoll_service::may_try_now(socket_impl& impl, wait_kind kind) {
    return impl.queue(kind).idle_now.load(std::memory_order_acquire);
}

void rpoll_service::set_retry_accept(socket_impl& impl, bool on) {
    std::lock_guard lock(mutex_);
    impl.retry_accept_ = on;
}

void rpoll_service::set_retry_connect(socket_impl& impl, bool on) {
    std::lock_guard lock(mutex_);
    impl.retry_connect_ = on;
}

} // namespace corio
