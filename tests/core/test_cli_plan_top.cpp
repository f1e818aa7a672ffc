// `nest-cli plan --top K` (issue 24, point 4): the JSON gains `top` with K entries (rank,
// objective_s, delta_s, delta_pct, verified, plan, report), best first, the first equal to the
// output's own objective and plan; without --top (or with --top 1) the output has no `top`
// and the same plan; --top with another planner and --top 0 are usage errors (exit 2).
// --threads N (the nest planner's outer points dealt to N searches) gives the same plan;
// --threads with another planner, 0 or above 64 are usage errors.
#include "JsonUtil.h"

#include "CoreTestSupport.h"

using coretest::runCli;
using nest::Json;

namespace {

using Args = std::vector<std::string>;

const Args kSmall{"plan", "--cluster", "paper-v100-8", "--model", "llama2-7b", "--batch", "16", "--seq", "1024"};

Args with(Args extra)
{
    Args a = kSmall;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
}

} // namespace

TEST(CliPlanTop, topListsDistinctPlansBestFirst)
{
    const coretest::Run top = runCli(with({"--top", "4", "--json"}));
    ASSERT_EQ(top.exitCode, 0) << top.err;
    const Json j = Json::parse(top.out, nullptr, false);
    ASSERT_TRUE(j.contains("top"));
    const Json &list = j.at("top");
    ASSERT_EQ(list.size(), 4u);
    double previous = 0;
    for (size_t i = 0; i < list.size(); ++i) {
        const Json &e = list[i];
        EXPECT_EQ(e.at("rank").get<int>(), int(i) + 1);
        EXPECT_TRUE(e.at("verified").get<bool>());
        const double t = e.at("objective_s").get<double>();
        EXPECT_GE(t, previous);
        previous = t;
        EXPECT_DOUBLE_EQ(e.at("delta_s").get<double>(), t - list[0].at("objective_s").get<double>());
        EXPECT_GE(e.at("delta_pct").get<double>(), 0.0);
        EXPECT_TRUE(e.contains("plan") && e.contains("report"));
        for (size_t k = 0; k < i; ++k)
            EXPECT_NE(e.at("plan"), list[k].at("plan"));
    }
    EXPECT_EQ(list[0].at("objective_s").get<double>(), j.at("objective_s").get<double>());
    EXPECT_EQ(list[0].at("plan"), j.at("plan"));

    const coretest::Run one = runCli(with({"--json"}));
    ASSERT_EQ(one.exitCode, 0) << one.err;
    const Json j1 = Json::parse(one.out, nullptr, false);
    EXPECT_FALSE(j1.contains("top"));
    EXPECT_EQ(j1.at("plan"), j.at("plan"));
    EXPECT_EQ(j1.at("objective_s").get<double>(), j.at("objective_s").get<double>());
    const coretest::Run explicitOne = runCli(with({"--top", "1", "--json"}));
    EXPECT_FALSE(Json::parse(explicitOne.out, nullptr, false).contains("top"));

    const coretest::Run text = runCli(with({"--top", "3"}));
    ASSERT_EQ(text.exitCode, 0) << text.err;
    EXPECT_NE(text.out.find("the 3 best distinct plans"), std::string::npos) << text.out;
}

TEST(CliPlanTop, usageErrors)
{
    EXPECT_EQ(runCli(with({"--top", "3", "--planner", "flat"})).exitCode, 2);
    EXPECT_EQ(runCli(with({"--top", "0"})).exitCode, 2);
    EXPECT_EQ(runCli(with({"--threads", "2", "--planner", "flat"})).exitCode, 2);
    EXPECT_EQ(runCli(with({"--threads", "0"})).exitCode, 2);
    EXPECT_EQ(runCli(with({"--threads", "65"})).exitCode, 2);
}

// --threads N: the same plan and objective as one search (the JSON's plan, to the last bit).
TEST(CliPlanTop, threadsGiveTheSamePlan)
{
    const coretest::Run one = runCli(with({"--json"}));
    const coretest::Run two = runCli(with({"--threads", "2", "--json"}));
    ASSERT_EQ(one.exitCode, 0) << one.err;
    ASSERT_EQ(two.exitCode, 0) << two.err;
    const Json a = Json::parse(one.out, nullptr, false), b = Json::parse(two.out, nullptr, false);
    EXPECT_EQ(b.at("plan"), a.at("plan"));
    EXPECT_EQ(b.at("objective_s").get<double>(), a.at("objective_s").get<double>());
}
