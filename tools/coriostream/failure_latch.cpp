#include "failure_latch.hpp"

#include <utility>

namespace coriostream {

void failure_latch::on_failure(std::function<void()> hook) {
    {
        std::lock_guard lock(mutex_);
        if (!failed_) {
            hooks_.push_back(std::move(hook));
            return;
        }
    }
    hook();
}

void failure_latch::fail(const std::string& message) {
    std::vector<std::function<void()>> hooks;
    {
        std::lock_guard lock(mutex_);
        if (failed_)
            return;
        failed_ = true;
        message_ = message;
        hooks = std::exchange(hooks_, {});
    }
    for (auto& hook : hooks)
        hook();
}

bool failure_latch::failed() const {
    std::lock_guard lock(mutex_);
    return failed_;
}

std::string failure_latch::message() const {
    std::lock_guard lock(mutex_);
    return message_;
}

} // namespace coriostream
