#pragma once

#include <atomic>
#include <cstdint>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace corio::detail {

/// A mutex for the service's and each socket's short critical sections,
/// taken several times per operation: uncontended, lock and unlock are one
/// atomic instruction each, where glibc's pthread_mutex_lock and unlock
/// spend about 50 instructions a pair on mutex-kind dispatch (measured with
/// callgrind on the round-trip benchmark, doc/performance.md). Contended,
/// it sleeps in the kernel like any mutex: no spinning.
///
/// Ulrich Drepper's "Futexes Are Tricky", mutex 3. State transitions:
///   unlocked (0) -> locked (1): lock() with no contention, one CAS;
///   locked (1) -> contended (2): a locker found it taken and will sleep;
///   contended (2) -> unlocked (0): unlock() of a contended mutex, which
///     then wakes one sleeper; that sleeper takes it as contended (2), since
///     it cannot know whether others still sleep.
/// Acquire on taking, release on giving back: what it guards is seen whole.
///
/// Meets BasicLockable, so std::lock_guard and std::unique_lock take it.
class futex_mutex {
public:
    futex_mutex() = default;
    futex_mutex(const futex_mutex&) = delete;
    futex_mutex& operator=(const futex_mutex&) = delete;

    void lock() noexcept {
        std::uint32_t expected = unlocked;
        if (state_.compare_exchange_strong(expected, locked, std::memory_order_acquire,
                                           std::memory_order_relaxed))
            return;
        // Someone holds it: mark it contended, and sleep while it stays so.
        if (expected != contended)
            expected = state_.exchange(contended, std::memory_order_acquire);
        while (expected != unlocked) {
            wait(contended);
            expected = state_.exchange(contended, std::memory_order_acquire);
        }
    }

    void unlock() noexcept {
        if (state_.exchange(unlocked, std::memory_order_release) == contended)
            wake_one();
    }

private:
    static constexpr std::uint32_t unlocked = 0;
    static constexpr std::uint32_t locked = 1;
    static constexpr std::uint32_t contended = 2;

    void wait(std::uint32_t value) noexcept {
        // Returns at once if the state is no longer `value`; a spurious
        // return only goes round the loop in lock() again.
        ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&state_), FUTEX_WAIT_PRIVATE, value,
                  nullptr, nullptr, 0);
    }

    void wake_one() noexcept {
        ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&state_), FUTEX_WAKE_PRIVATE, 1,
                  nullptr, nullptr, 0);
    }

    std::atomic<std::uint32_t> state_{unlocked};
    static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));
};

} // namespace corio::detail
