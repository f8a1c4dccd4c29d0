#include "core/fields.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/config.hpp"
#include "core/error.hpp"

namespace kbench {
namespace {

TEST(Fields, ReadsWhatIsThere) {
    json j = {{"name", "x"}, {"n", 3}, {"ok", true}, {"v", 1.5}, {"list", {1, 2}}};
    Fields f(j, "test message");
    EXPECT_EQ(f.text("name"), "x");
    EXPECT_EQ(f.integer("n"), 3);
    EXPECT_EQ(f.count("n"), 3u);
    EXPECT_TRUE(f.flag("ok"));
    EXPECT_DOUBLE_EQ(f.real("v"), 1.5);
    EXPECT_DOUBLE_EQ(f.real("n"), 3.0);
    EXPECT_EQ(f.integers("list"), (std::vector<std::int64_t>{1, 2}));
}

TEST(Fields, AMissingFieldIsAnErrorThatNamesIt) {
    json j = {{"name", "x"}};
    Fields f(j, "timing reply");
    try {
        f.flag("passed");
        FAIL() << "no error";
    } catch (const ProtocolError& e) {
        EXPECT_NE(std::string(e.what()).find("timing reply lacks the field 'passed'"),
                  std::string::npos)
            << e.what();
    }
}

TEST(Fields, AMistypedFieldIsAnErrorThatSaysWhatWasThere) {
    json j = {{"passed", "true"}, {"n", -1}, {"v", nullptr}, {"big", 1e300}};
    Fields f(j, "reply");
    EXPECT_THROW(f.flag("passed"), ProtocolError);
    EXPECT_THROW(f.count("n"), ProtocolError);
    EXPECT_THROW(f.real("v"), ProtocolError);
    EXPECT_THROW(f.integer("big"), ProtocolError);
    EXPECT_THROW(f.small("big"), ProtocolError);
    try {
        f.flag("passed");
    } catch (const ProtocolError& e) {
        EXPECT_NE(std::string(e.what()).find("is a string, expected a boolean"), std::string::npos)
            << e.what();
    }
    json list = json::array();
    EXPECT_THROW(Fields(list, "x"), ProtocolError);
}

TEST(Fields, NonFiniteRealsTravelAsText) {
    const double inf = std::numeric_limits<double>::infinity();
    json j = {{"a", real_json(inf)},
              {"b", real_json(-inf)},
              {"c", real_json(std::nan(""))},
              {"d", real_json(2.5)},
              {"e", reals_json({1.0, inf})}};
    std::string wire = j.dump();
    EXPECT_EQ(wire.find("null"), std::string::npos) << wire;
    json parsed = json::parse(wire);
    Fields f(parsed, "numbers");
    EXPECT_EQ(f.real("a"), inf);
    EXPECT_EQ(f.real("b"), -inf);
    EXPECT_TRUE(std::isnan(f.real("c")));
    EXPECT_EQ(f.real("d"), 2.5);
    EXPECT_EQ(f.reals("e")[1], inf);
    EXPECT_THROW(real_from_json("infinity", "x"), ProtocolError);
}

TEST(TimingConfig, RoundTripsAndRefusesAMissingField) {
    TimingConfig c;
    c.max_samples = 77;
    c.protocol = Mode::kernelbench;
    TimingConfig back = TimingConfig::from_json(c.to_json());
    EXPECT_EQ(back.max_samples, 77);
    EXPECT_EQ(back.protocol, Mode::kernelbench);
    json partial = c.to_json();
    partial.erase("min_samples");
    EXPECT_THROW(TimingConfig::from_json(partial), ProtocolError);
}

}  // namespace
}  // namespace kbench
