#define BOOST_TEST_MODULE function_ref
#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <string>

#include <corio/detail/function_ref.hpp>

using corio::detail::function_ref;

namespace {

int apply(function_ref<int(int)> f, int x) { return f(x); }

} // namespace

BOOST_AUTO_TEST_CASE(calls_the_callable_it_refers_to_with_its_arguments) {
    int offset = 40; // not const: a const int needs no capture, and clang warns on one
    BOOST_TEST(apply([offset](int x) { return x + offset; }, 2) == 42);
}

BOOST_AUTO_TEST_CASE(refers_to_the_callable_rather_than_copying_it) {
    // A capture as large as the try-first transfers' (five references): the
    // call sees and changes the caller's state, not a copy's.
    std::size_t calls = 0;
    int a = 1, b = 2, c = 3, d = 4;
    auto call = [&](int x) {
        ++calls;
        return x + a + b + c + d;
    };
    function_ref<int(int)> ref = call;
    BOOST_TEST(ref(0) == 10);
    a = 11;
    BOOST_TEST(ref(0) == 20);
    BOOST_TEST(calls == 2U);
}

BOOST_AUTO_TEST_CASE(passes_reference_arguments_through) {
    std::string out;
    const auto fill = [](std::string& s) -> std::size_t {
        s = "filled";
        return s.size();
    };
    function_ref<std::size_t(std::string&)> ref = fill;
    BOOST_TEST(ref(out) == 6U);
    BOOST_TEST(out == "filled");
}
