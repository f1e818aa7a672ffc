// Today's models through the real nest-cli (issue 45): every command's --model takes a real
// Hugging Face config.json of a heterogeneous model, and bad layer-kind input exits 2 with the
// file, the JSON path and the reason.
#include "CoreTestSupport.h"

namespace {

using coretest::contains;
using coretest::runCli;
using coretest::sample;
using Json = nlohmann::json;

std::string hf(const std::string &name) { return sample("sample_configs/models/hf/" + name + ".json"); }

} // namespace

TEST(CliLayerKinds, inspectShowsTheStrip)
{
    const coretest::Run r = runCli({"inspect", "--model", hf("deepseek-v3"), "--json"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const Json m = Json::parse(r.out).at("model");
    EXPECT_EQ(m.at("layer_pattern"), "3*dense, 58*moe, mtp");
    EXPECT_EQ(m.at("layer_kind_counts").at("moe"), 58);
    EXPECT_EQ(m.at("layer_kind_counts").at("mtp"), 1);
    // The config's node-limited routing: n_group 8, topk_group 4 (topk_method noaux_tc).
    EXPECT_EQ(m.at("routing"), Json::parse(R"({"experts": 256, "top_k": 8, "router_groups": 8, "router_group_topk": 4})"));
    // DeepSeek-V2-Lite's "greedy" top-k ignores its groups (n_group 1 there anyway).
    const coretest::Run lite = runCli({"inspect", "--model", hf("deepseek-v2-lite"), "--json"});
    ASSERT_EQ(lite.exitCode, 0) << lite.err;
    EXPECT_EQ(Json::parse(lite.out).at("model").at("routing").at("router_groups"), 0);
    const coretest::Run text = runCli({"inspect", "--model", hf("nemotron-h-8b-base-8k")});
    ASSERT_EQ(text.exitCode, 0) << text.err;
    EXPECT_TRUE(contains(text.out, "layers:            mamba, mlp, mamba, mlp")) << text.out;
}

// Each command accepts the config.json files directly; plans cut a heterogeneous stack and
// evaluate agrees with the plan it was given.
TEST(CliLayerKinds, everyCommandTakesTheConfigs)
{
    coretest::TempDir dir;
    const std::string plan = dir.filePath("plan.json");
    for (const std::string name : {"gemma-3-1b-it", "nemotron-h-8b-base-8k", "deepseek-v2-lite"}) {
        SCOPED_TRACE(name);
        const coretest::Run p = runCli({"plan", "--cluster", "paper-v100-16", "--model", hf(name), "--seq", "1024",
                                        "--batch", "64", "--out", plan, "--json"},
                                       120000);
        ASSERT_EQ(p.exitCode, 0) << p.err;
        const Json result = Json::parse(p.out);
        const coretest::Run e = runCli({"evaluate", "--cluster", "paper-v100-16", "--model", hf(name), "--plan", plan,
                                        "--json"});
        ASSERT_EQ(e.exitCode, 0) << e.err;
        const double planned = result.at("objective_s").get<double>();
        const double evaluated = Json::parse(e.out).at("iteration_time_s").get<double>();
        EXPECT_NEAR(evaluated, planned, 1e-9 * planned);
        const coretest::Run c = runCli({"compare", "--cluster", "paper-v100-16", "--model", hf(name), "--seq", "1024",
                                        "--batch", "64", "--planners", "nest,megatron"},
                                       120000);
        EXPECT_EQ(c.exitCode, 0) << c.err;
    }
}

TEST(CliLayerKinds, badLayerKindsExitTwoWithThePath)
{
    coretest::TempDir dir;
    struct Case {
        const char *name;
        Json model;
        const char *where;
    };
    const Json base = Json::parse(R"({"format": "nest-model", "family": "llama", "hidden": 256, "heads": 8,
        "vocab": 1000, "ffn_hidden": 512, "layers": 8})");
    const auto with = [&](const char *extra) {
        Json j = base;
        j.update(Json::parse(extra));
        return j;
    };
    const Case cases[] = {
        {"unknown kind", with(R"({"layer_pattern": ["4*dense", "4*warp"]})"), "at layer_pattern[1]: unknown layer kind 'warp'"},
        {"mla dims", with(R"({"kv_lora_rank": 64, "qk_rope_head_dim": 16, "qk_nope_head_dim": 0, "v_head_dim": 32})"),
         "at qk_nope_head_dim: qk_nope_head_dim must be positive with MLA"},
        {"top-k", with(R"({"experts": 4, "top_k": 6})"), "at top_k: top_k (6) must not exceed experts (4)"},
        {"too long", with(R"({"layer_pattern": "5*dense, 5*sliding", "sliding_window": 64})"),
         "at layer_pattern: the pattern holds 10 layers, more than the model's 8"},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.name);
        const std::string file = dir.filePath(coretest::rowName(c.name) + ".json");
        ASSERT_TRUE(coretest::writeFile(file, c.model.dump()));
        for (const char *cmd : {"inspect", "plan"}) {
            std::vector<std::string> args = {cmd, "--model", file};
            if (std::string(cmd) == "plan")
                args.insert(args.end(), {"--cluster", "paper-v100-16"});
            const coretest::Run r = runCli(args);
            EXPECT_EQ(r.exitCode, 2) << r.err;
            EXPECT_TRUE(contains(r.err, file)) << r.err;
            EXPECT_TRUE(contains(r.err, c.where)) << r.err;
        }
    }
    // A config.json whose layer_types lists an unknown type, or too few layers.
    Json gemma = Json::parse(coretest::readFile(hf("gemma-3-1b-it")));
    gemma["layer_types"] = Json::array();
    for (int i = 0; i < 26; ++i)
        gemma["layer_types"].push_back(i == 7 ? "lightning_attention" : "full_attention");
    const std::string file = dir.filePath("config.json");
    ASSERT_TRUE(coretest::writeFile(file, gemma.dump()));
    coretest::Run r = runCli({"inspect", "--model", file});
    EXPECT_EQ(r.exitCode, 2);
    EXPECT_TRUE(contains(r.err, "at layer_types[7]: unknown layer type 'lightning_attention'")) << r.err;
    gemma["layer_types"].erase(0);
    ASSERT_TRUE(coretest::writeFile(file, gemma.dump()));
    r = runCli({"inspect", "--model", file});
    EXPECT_EQ(r.exitCode, 2);
    EXPECT_TRUE(contains(r.err, "at layer_types: lists 25 layers, the model has 26")) << r.err;
    // Router groups that do not divide the experts, or hold fewer than top-k experts.
    Json grouped = Json::parse(coretest::readFile(hf("deepseek-v3")));
    grouped["n_group"] = 7;
    ASSERT_TRUE(coretest::writeFile(file, grouped.dump()));
    r = runCli({"inspect", "--model", file});
    EXPECT_EQ(r.exitCode, 2);
    EXPECT_TRUE(contains(r.err, "at n_group: n_group (7) must divide n_routed_experts (256)")) << r.err;
    grouped["n_group"] = 64;
    grouped["topk_group"] = 1;
    ASSERT_TRUE(coretest::writeFile(file, grouped.dump()));
    r = runCli({"inspect", "--model", file});
    EXPECT_EQ(r.exitCode, 2);
    EXPECT_TRUE(contains(r.err, "at topk_group: topk_group (1) groups of 4 experts hold fewer than num_experts_per_tok (8)"))
        << r.err;
    // An MLA config without its ranks.
    Json ds = Json::parse(coretest::readFile(hf("deepseek-v3")));
    ds.erase("qk_nope_head_dim");
    ASSERT_TRUE(coretest::writeFile(file, ds.dump()));
    r = runCli({"inspect", "--model", file});
    EXPECT_EQ(r.exitCode, 2);
    EXPECT_TRUE(contains(r.err, "at qk_nope_head_dim: required field is missing")) << r.err;
}
