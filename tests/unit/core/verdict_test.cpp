#include "core/verdict.hpp"

#include "core/error.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace kbench {

TEST(Verdict, JsonFollowsTheSchemaAndRoundTrips) {
    Verdict v;
    v.problem = {1, 19, "19_ReLU", "abc"};
    v.candidate = {"relu.py", "def", "cuda", 0};
    v.config = {{"mode", "strict"}, {"precision", "fp32"}, {"trials", 5}};
    v.status = Status::correct;
    v.correctness = {5, 5, 0.0, 0.0};
    v.timing = TimingResult{3105.2, 3110.0, 3090.1, 3095.0, 3120.9, 24, true, "median"};
    v.baseline = TimingResult{3070.4, 3071.0, 3060.0, 3065.0, 3080.0, 20, true, "median"};
    v.speedup = 0.989;
    v.speedup_ci95 = {0.981, 0.996};
    v.integrity.push_back({"torch_fallback", Severity::warn, "detail"});
    v.kernels.push_back({"relu4", "candidate", 1.0});
    v.phases_s = {{"build", 31.2}, {"load", 0.4}};

    json j = v.to_json();
    for (const char* key :
         {"problem", "candidate", "config", "status", "reason", "correctness", "timing", "baseline",
          "speedup", "speedup_ci95", "integrity", "kernels", "phases_s"})
        EXPECT_TRUE(j.contains(key)) << key;
    EXPECT_EQ(j["status"], "correct");
    EXPECT_EQ(j["problem"]["id"], 19);
    EXPECT_EQ(j["baseline"]["kind"], "eager");
    EXPECT_EQ(j["timing"]["n"], 24);

    Verdict back = Verdict::from_json(j);
    EXPECT_EQ(back.to_json(), j);
}

TEST(Verdict, MissingPartsAreNull) {
    Verdict v;
    v.status = Status::compile_error;
    json j = v.to_json();
    EXPECT_TRUE(j["timing"].is_null());
    EXPECT_TRUE(j["speedup"].is_null());
    EXPECT_TRUE(j["problem"]["level"].is_null());
    EXPECT_EQ(j["status"], "compile_error");
}

TEST(Verdict, AnUnknownStatusIsAnErrorNotAHarnessFailure) {
    Verdict v;
    v.status = Status::correct;
    json j = v.to_json();
    j["status"] = "splendid";
    try {
        Verdict::from_json(j);
        ADD_FAILURE() << "an unknown status was read";
    } catch (const ProtocolError& e) {
        EXPECT_NE(std::string(e.what()).find("unknown status 'splendid'"), std::string::npos);
    }
}

// Differences of a wrong output can be infinite; the verdict survives its own JSON, and the
// store's, with them.
TEST(Verdict, NonFiniteNumbersSurviveTheirJson) {
    Verdict v;
    v.status = Status::incorrect;
    v.correctness.max_abs_diff = std::numeric_limits<double>::infinity();
    v.correctness.max_rel_diff = std::numeric_limits<double>::quiet_NaN();
    v.speedup = std::numeric_limits<double>::infinity();
    std::string text = v.to_json().dump();
    EXPECT_NE(text.find("\"max_abs_diff\":\"inf\""), std::string::npos) << text;
    Verdict back = Verdict::from_json(json::parse(text));
    EXPECT_TRUE(std::isinf(back.correctness.max_abs_diff));
    EXPECT_TRUE(std::isnan(back.correctness.max_rel_diff));
    EXPECT_TRUE(back.speedup && std::isinf(*back.speedup));
}

TEST(Status, NamesRoundTrip) {
    for (Status s : {Status::correct, Status::incorrect, Status::rejected, Status::compile_error,
                     Status::load_error, Status::runtime_error, Status::timeout, Status::crash,
                     Status::infra_error})
        EXPECT_EQ(parse_status(to_string(s)), s);
    EXPECT_FALSE(parse_status("nope"));
}

TEST(Config, KernelBenchTolerances) {
    EXPECT_EQ(default_tolerance(Precision::fp32), 1e-4);
    EXPECT_EQ(default_tolerance(Precision::fp16), 1e-2);
    EXPECT_EQ(default_tolerance(Precision::bf16), 1e-2);
    CheckConfig c;
    c.tolerance = 0.5;
    EXPECT_EQ(c.atol(), 0.5);
    EXPECT_EQ(c.rtol(), 0.5);
    EXPECT_THROW(parse_precision("fp8"), UsageError);
}

TEST(Config, TimingConfigRoundTrips) {
    TimingConfig t;
    t.protocol = Mode::kernelbench;
    t.max_samples = 77;
    TimingConfig back = TimingConfig::from_json(t.to_json());
    EXPECT_EQ(back.protocol, Mode::kernelbench);
    EXPECT_EQ(back.max_samples, 77);
}

}  // namespace kbench
