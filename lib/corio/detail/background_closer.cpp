#include "corio/detail/background_closer.hpp"

#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include <pthread.h>

#include <boost/asio/error.hpp>

namespace corio::detail {

namespace {

void start_detached(std::function<void()> body) {
    // Named, so that top -H, gdb and /proc tell corio's threads from
    // rsockets' own (which keep the program's name).
    std::thread([body = std::move(body)] {
        pthread_setname_np(pthread_self(), "corio-closer");
        body();
    }).detach();
}

/// The queue of jobs per key and the workers that drain it.
///
/// A key is "ready" when it has jobs and no worker is running one of them;
/// ready_ lists those keys, oldest first. A worker takes the first ready
/// key, runs its first job without the lock, then puts the key back at the
/// end of ready_ if more jobs came for it. So one key never has two jobs
/// running, and keys never wait behind one another's jobs while a worker is
/// free. Every field is guarded by mutex_.
class background_closer {
public:
    boost::system::error_code run(int key, std::function<void()> job) {
        std::unique_lock lock(mutex_);
        auto& jobs = jobs_[key];
        jobs.push_back(std::move(job));
        ++pending_;
        // A key with a job running is not ready: its worker re-queues it.
        if (jobs.size() == 1 && !running_.contains(key))
            ready_.push_back(key);
        // Idle workers take ready keys one each; only keys beyond what they
        // can take need a new worker. (An idle worker woken for a key
        // counts as idle until it runs, so comparing with idle_ alone would
        // hand a whole burst to the workers that happen to be idle.)
        if (ready_.size() <= idle_) {
            wake_.notify_one();
            return {};
        }
        if (idle_ > 0)
            wake_.notify_all();
        if (workers_ >= max_background_workers)
            return {}; // a busy worker will come back for it
        ++workers_;
        lock.unlock();
        try {
            starter_([this] { work(); });
        } catch (...) {
            // The job stays queued: the next call that can start a worker
            // runs it. Only with no worker at all is it stranded for now,
            // and then the caller hears of it.
            lock.lock();
            --workers_;
            if (workers_ == 0)
                return boost::asio::error::try_again;
        }
        return {};
    }

    std::size_t pending() {
        std::lock_guard lock(mutex_);
        return pending_;
    }

    background_worker_starter set_starter(background_worker_starter starter) {
        std::lock_guard lock(mutex_);
        auto previous = starter_;
        starter_ = starter;
        return previous;
    }

    /// At exit: wait a bounded time for the jobs, then stop taking new ones.
    void drain_for_exit() {
        std::unique_lock lock(mutex_);
        done_.wait_for(lock, exit_grace, [this] { return pending_ == 0; });
        exiting_ = true;
        wake_.notify_all();
    }

private:
    void work() {
        std::unique_lock lock(mutex_);
        for (;;) {
            if (exiting_)
                break;
            if (ready_.empty()) {
                ++idle_;
                // Idle workers end after a while: a burst of closes leaves no
                // threads behind for the life of the process.
                const bool woke = wake_.wait_for(lock, idle_linger, [this] {
                    return !ready_.empty() || exiting_;
                });
                --idle_;
                if (!woke)
                    break;
                continue;
            }
            const int key = ready_.front();
            ready_.pop_front();
            auto found = jobs_.find(key);
            auto job = std::move(found->second.front());
            found->second.pop_front();
            running_.insert(key);
            lock.unlock();
            try {
                job();
            } catch (...) {
                // A close has no one to report to from here; rsocket_ops'
                // calls do not throw, so this only keeps the worker alive.
            }
            job = nullptr; // destroyed without the lock, like it ran
            lock.lock();
            running_.erase(key);
            --pending_;
            found = jobs_.find(key);
            if (found->second.empty())
                jobs_.erase(found);
            else
                ready_.push_back(key);
            if (pending_ == 0)
                done_.notify_all();
        }
        --workers_;
        // A job that arrived as this worker decided to end finds it gone:
        // hand it on rather than leave it stranded.
        if (!ready_.empty() && idle_ > 0)
            wake_.notify_one();
    }

    static constexpr std::chrono::seconds idle_linger{2};

    std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable done_;
    std::unordered_map<int, std::deque<std::function<void()>>> jobs_;
    std::deque<int> ready_;
    /// Keys with a job running now: at most one each.
    std::unordered_set<int> running_;
    std::size_t pending_ = 0;
    std::size_t workers_ = 0;
    std::size_t idle_ = 0;
    bool exiting_ = false;
    background_worker_starter starter_ = start_detached;
};

background_closer& closer() {
    // Never destroyed: a worker may still be in a job at exit.
    static auto* instance = [] {
        auto* c = new background_closer;
        std::atexit([] { closer().drain_for_exit(); });
        return c;
    }();
    return *instance;
}

} // namespace

boost::system::error_code run_in_background(int key, std::function<void()> job) {
    return closer().run(key, std::move(job));
}

std::size_t background_jobs_pending() noexcept { return closer().pending(); }

background_worker_starter set_background_worker_starter(background_worker_starter starter) noexcept {
    return closer().set_starter(starter);
}

} // namespace corio::detail
