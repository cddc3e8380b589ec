#include "corio/detail/background_closer.hpp"

#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace corio::detail {

namespace {

class background_closer {
public:
    void run(int fd, std::function<void()> job) {
        std::lock_guard lock(mutex_);
        auto& jobs = jobs_[fd];
        jobs.push_back(std::move(job));
        if (jobs.size() == 1)
            std::thread([this, fd] { drain(fd); }).detach();
        // Otherwise the thread already working on this socket takes it.
    }

private:
    void drain(int fd) {
        std::unique_lock lock(mutex_);
        for (;;) {
            auto job = std::move(jobs_[fd].front());
            lock.unlock();
            job();
            lock.lock();
            auto found = jobs_.find(fd);
            found->second.pop_front();
            if (found->second.empty()) {
                jobs_.erase(found);
                return;
            }
        }
    }

    std::mutex mutex_;
    std::unordered_map<int, std::deque<std::function<void()>>> jobs_;
};

} // namespace

void run_in_background(int fd, std::function<void()> job) {
    // Never destroyed: a detached thread may still be in a job at exit.
    static auto* closer = new background_closer;
    closer->run(fd, std::move(job));
}

} // namespace corio::detail
