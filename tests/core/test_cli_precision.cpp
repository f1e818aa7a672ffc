// nest-cli's --precision and --fp8-recipe (issue 46): what each command refuses, with exit 2
// and the reason (the device that lacks the format, the framework that does not train in it,
// the values allowed); and that a plan searched over a list records its precision.
#include "CoreTestSupport.h"

#include <gtest/gtest.h>

using namespace coretest;

TEST(CliPrecision, badPrecisionsExitTwoWithTheReason)
{
    const std::string cluster = "--cluster=" + sample("sample_configs/clusters/paper-v100-16.json");
    struct Case {
        std::vector<std::string> args;
        const char *says;
    };
    const Case cases[] = {
        {{"plan", "--cluster", "superpod-h100-256", "--model", "llama2-7b", "--precision", "nvfp4"}, "h100-sxm-80gb"},
        {{"plan", "--cluster", "superpod-h100-256", "--model", "llama2-7b", "--precision", "fp9"}, "bf16, fp8, mxfp8, nvfp4"},
        {{"plan", "--cluster", "superpod-h100-256", "--model", "llama2-7b", "--precision", "bf16,bf16"}, "twice"},
        {{"plan", "--cluster", "superpod-h100-256", "--model", "llama2-7b", "--precision", "bf16", "--fp8-recipe",
          "current"},
         "fp8"},
        {{"plan", "--cluster", "superpod-h100-256", "--model", "llama2-7b", "--fp8-recipe", "weekly"}, "delayed"},
        {{"evaluate", "--cluster", "superpod-h100-256", "--model", "llama2-7b", "--precision", "bf16,fp8"}, "one"},
        {{"evaluate", cluster, "--model", "llama2-7b", "--precision", "fp8"}, "v100"},
        {{"plan", "--cluster", "superpod-h100-256", "--model", "llama2-7b", "--framework", "deepspeed", "--precision",
          "fp8"},
         "deepspeed"},
    };
    for (const Case &c : cases) {
        const coretest::Run r = runCli(c.args);
        EXPECT_EQ(r.exitCode, 2) << c.args.back() << ": " << r.err;
        EXPECT_TRUE(contains(r.err, c.says)) << r.err;
    }
}

TEST(CliPrecision, planSearchesTheListAndRecordsThePrecision)
{
    const coretest::Run r = runCli({"plan", "--cluster", "superpod-h100-256", "--model", "llama2-7b", "--precision", "bf16,fp8",
                          "--json"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const nlohmann::json j = jsonObject(r.out);
    // Which one wins is the cost model's business; the plan names it and the search lists both.
    ASSERT_TRUE(j.at("plan").contains("precision")) << r.out.substr(0, 400);
    EXPECT_EQ(j.at("plan").at("precision"), "fp8");
    EXPECT_EQ(j.at("plan").at("fp8_recipe"), "delayed");
    EXPECT_EQ(j.at("search").at("precisions"), nlohmann::json::array({"bf16", "fp8"}));
    const coretest::Run bf = runCli({"plan", "--cluster", "superpod-h100-256", "--model", "llama2-7b", "--precision", "bf16",
                           "--json"});
    ASSERT_EQ(bf.exitCode, 0) << bf.err;
    EXPECT_FALSE(jsonObject(bf.out).at("plan").contains("precision"));
    EXPECT_LT(j.at("objective_s").get<double>(), jsonObject(bf.out).at("objective_s").get<double>());
}
