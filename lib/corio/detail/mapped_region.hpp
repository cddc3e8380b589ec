#pragma once

#include <cerrno>
#include <cstddef>

#include <sys/mman.h>

#include <boost/system/error_code.hpp>

namespace corio::detail {

/// Memory for a receiver's region: anonymous, page-aligned and zeroed, so
/// that registering it never exposes old heap contents to the peer.
class mapped_region {
public:
    mapped_region() noexcept = default;
    mapped_region(const mapped_region&) = delete;
    mapped_region& operator=(const mapped_region&) = delete;
    ~mapped_region() {
        if (data_ != nullptr)
            ::munmap(data_, size_);
    }

    boost::system::error_code allocate(std::size_t size) noexcept {
        void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return {errno, boost::system::system_category()};
        data_ = static_cast<std::byte*>(p);
        size_ = size;
        return {};
    }

    std::byte* data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }

private:
    std::byte* data_ = nullptr;
    std::size_t size_ = 0;
};

} // namespace corio::detail
