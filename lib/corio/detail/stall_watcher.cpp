#include "corio/detail/stall_watcher.hpp"

#include <algorithm>
#include <utility>

#include <pthread.h>

#include <corio/detail/socket_impl.hpp>

namespace corio::detail {

stall_watcher::stall_watcher(check_function check) : check_(std::move(check)) {}

stall_watcher::~stall_watcher() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable())
        thread_.join();
}

void stall_watcher::watch(std::weak_ptr<socket_impl> impl, clock::time_point deadline) {
    std::lock_guard lock(mutex_);
    if (stopping_)
        return;
    entries_.push_back({std::move(impl), deadline});
    if (!thread_.joinable())
        thread_ = std::thread([this] {
            pthread_setname_np(pthread_self(), "corio-stall"); // as the closer's
            run();
        });
    wake_.notify_all();
}

void stall_watcher::run() {
    std::vector<entry> due;
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        if (entries_.empty()) {
            wake_.wait(lock);
            continue;
        }
        const auto next = std::min_element(entries_.begin(), entries_.end(),
                                           [](const entry& a, const entry& b) {
                                               return a.deadline < b.deadline;
                                           })->deadline;
        if (clock::now() < next) {
            wake_.wait_until(lock, next);
            continue;
        }
        const auto now = clock::now();
        const auto split = std::partition(entries_.begin(), entries_.end(),
                                          [now](const entry& e) { return e.deadline > now; });
        due.assign(std::make_move_iterator(split), std::make_move_iterator(entries_.end()));
        entries_.erase(split, entries_.end());
        lock.unlock();
        // The check takes the service mutex and may post completions: never
        // under this mutex, which watch() takes with the service mutex held.
        for (auto& e : due) {
            std::optional<clock::time_point> again;
            if (auto impl = e.impl.lock())
                again = check_(*impl);
            if (again)
                e.deadline = *again;
            else
                e.impl.reset();
        }
        lock.lock();
        for (auto& e : due)
            if (!e.impl.expired())
                entries_.push_back(std::move(e));
        due.clear();
    }
}

} // namespace corio::detail
