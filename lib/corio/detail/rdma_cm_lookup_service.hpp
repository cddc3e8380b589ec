#pragma once

#include <mutex>
#include <optional>
#include <utility>

#include <boost/asio/execution_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

namespace corio::detail {

/// The thread an execution context's rdma_getaddrinfo lookups run on
/// (corio::resolve_method::rdma_getaddrinfo), as Asio's resolver runs
/// getaddrinfo on a private thread: the lookup blocks, and librdmacm has no
/// asynchronous form of it. Started at the first lookup; one lookup at a
/// time, in order. shutdown() stops it: a lookup under way runs to its end,
/// queued ones are dropped with their handlers, as Asio drops the handlers
/// of a context that shuts down.
///
/// Thread Safety: every member may be called from any thread.
class rdma_cm_lookup_service final : public boost::asio::execution_context::service {
public:
    /// Asio's use_service<> needs a static id with Boost 1.81.
    static boost::asio::execution_context::id id;

    explicit rdma_cm_lookup_service(boost::asio::execution_context& context)
        : boost::asio::execution_context::service(context) {}

    ~rdma_cm_lookup_service() override { stop(); }

    /// Runs `job()` on the lookup thread; after shutdown, destroys it unrun.
    template <class Job>
    void run(Job&& job) {
        std::unique_lock lock(mutex_);
        if (stopped_)
            return;
        if (!pool_)
            pool_.emplace(1);
        auto executor = pool_->get_executor();
        lock.unlock();
        boost::asio::post(executor, std::forward<Job>(job));
    }

private:
    void shutdown() override { stop(); }

    void stop() {
        std::unique_lock lock(mutex_);
        stopped_ = true;
        if (!pool_)
            return;
        lock.unlock();
        pool_->stop();
        pool_->join();
    }

    std::mutex mutex_;
    bool stopped_ = false;
    std::optional<boost::asio::thread_pool> pool_;
};

} // namespace corio::detail
