#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace corio::detail {

template <class Signature>
class function_ref;

/// A non-owning reference to a callable, as C++26's std::function_ref: two
/// pointers, never an allocation. The try-first transfers pass their call
/// through one on every read_some and write_some; a std::function there
/// allocated for any lambda larger than two pointers.
///
/// The callable must outlive the function_ref: pass it down, never store it.
template <class R, class... Args>
class function_ref<R(Args...)> {
public:
    template <class F>
        requires(!std::is_same_v<std::remove_cvref_t<F>, function_ref> &&
                 std::is_invocable_r_v<R, F&, Args...>)
    function_ref(F&& f) noexcept // NOLINT(google-explicit-constructor): as std::function_ref
        : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
          call_([](void* object, Args... args) -> R {
              return (*static_cast<std::remove_reference_t<F>*>(object))(
                  std::forward<Args>(args)...);
          }) {}

    R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

private:
    void* object_;
    R (*call_)(void*, Args...);
};

} // namespace corio::detail
