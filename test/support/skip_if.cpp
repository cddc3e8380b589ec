#include "skip_if.hpp"

#include <cstdio>
#include <cstdlib>

namespace corio::test {

namespace {

/// Counts the cases that ran and those skip_if skipped, and turns a run in
/// which nothing but skipped cases would have run into exit 77.
class skipped_case_counter : public boost::unit_test::test_observer {
public:
    // Boost.Test deregisters every observer when it shuts down.
    skipped_case_counter() { boost::unit_test::framework::register_observer(*this); }

    void count_skip() { ++skipped_; }

    void test_unit_start(const boost::unit_test::test_unit& unit) override {
        if (unit.p_type == boost::unit_test::TUT_CASE)
            ++started_;
    }

    // At the end of the master suite, before Boost.Test's report (which
    // would say "No errors detected").
    void test_unit_finish(const boost::unit_test::test_unit& unit, unsigned long) override {
        if (unit.p_id != boost::unit_test::framework::master_test_suite().p_id || started_ > 0 ||
            skipped_ == 0)
            return;
        std::printf("SKIP: every test case that was to run (%d) was skipped; see the reasons above\n",
                    skipped_);
        std::fflush(stdout);
        // _Exit: the framework is still on the stack; its static destructors
        // must not run from inside it.
        std::_Exit(77);
    }

private:
    int started_ = 0;
    int skipped_ = 0;
};

// Registered before main, like Boost.Test's own global configurations, so
// it sees every case start.
skipped_case_counter counter;

} // namespace

boost::unit_test::precondition skip_if(skip_reason reason) {
    return boost::unit_test::precondition([reason](boost::unit_test::test_unit_id id) {
        const auto why = reason();
        if (!why)
            return boost::test_tools::assertion_result(true);
        const auto& unit = boost::unit_test::framework::get(id, boost::unit_test::TUT_ANY);
        std::printf("SKIP: %s: %s\n", unit.p_name.get().c_str(), why->c_str());
        std::fflush(stdout);
        counter.count_skip();
        boost::test_tools::assertion_result skipped(false);
        skipped.message() << *why;
        return skipped;
    });
}

} // namespace corio::test
