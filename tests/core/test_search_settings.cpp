// SearchSettings (core/planners/SearchSettings.h): the one conversion to SearchOptions, the JSON round
// trip (with guards that fail when a field is added to the struct but not to the JSON), the
// planner factory, the errors of bad JSON (each names its path), and the settings' effect on
// the plans the real planners return.
#include "Fixtures.h"
#include "ClusterIO.h"
#include "ClusterTemplates.h"
#include "ModelBuilder.h"
#include "ModelIO.h"
#include "SearchSettings.h"

#include "CoreTestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <iomanip>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

using namespace nest;

namespace {

using coretest::rowName;

// Counts the members of an aggregate: the longest brace-initialiser list it accepts.
struct AnyField {
    template <typename T>
    operator T() const;  // declared only: used in unevaluated contexts
};

template <typename T, typename... Fields>
constexpr std::size_t aggregateFieldCount()
{
    if constexpr (requires { T{Fields{}..., AnyField{}}; })
        return aggregateFieldCount<T, Fields..., AnyField>();
    else
        return sizeof...(Fields);
}

// Every field different from SearchSettings{} (checked in jsonRoundTrip).
SearchSettings everyFieldChanged()
{
    SearchSettings s;
    s.planner = "exhaustive";
    s.microBatches = {3, 1};
    s.schedules = {Schedule::Interleaved, Schedule::OneFOneB};
    s.virtualStages = {4, 6};
    s.maxStages = 6;
    s.allowTp = false;
    s.allowPp = false;
    s.allowDp = false;
    s.allowEp = false;
    s.allowCp = false;
    s.allowZero = false;
    s.allowRecompute = false;
    s.allowSequenceParallel = false;
    s.recomputeModes = {Recompute::Full, Recompute::None};
    s.tpCandidates = {4, 2};
    s.epCandidates = {2};
    s.etpCandidates = {1, 2};
    s.cpCandidates = {1, 2};
    s.cpMinTokensPerRank = 0;
    s.layouts = {Layout::ReplicasInside};
    s.memoryHeadroom = 0.125;
    s.framework = Framework::Fsdp;
    s.stack = Stack::Tuned;  // the default is Stack::Defaults
    s.pipelineUnits = PipelineUnits::LayersEmbeddingLoss;
    s.mcmcBudget = 750;
    s.seed = 42;
    s.topK = 5;
    s.precisions = {NumberFormat::Bf16, NumberFormat::Mxfp8};
    s.fp8Recipe = Fp8Recipe::Blockwise;
    s.target = "nemo";
    s.fp8Attention = true;
    s.recomputeModules.mask = static_cast<unsigned>(RecomputeModule::LayerNorm) |
                              static_cast<unsigned>(RecomputeModule::MoeAct);
    s.moeImbalance = 1.25;  // the default is 1.1
    s.capacityFactor = 1.5;
    s.moeHierarchicalDispatch = true;
    s.moeA2aOverlap = true;
    return s;
}

// A different valid value for one key of the JSON form; null when there is none.
Json altered(const Json &value)
{
    if (value.is_boolean())
        return !value.get<bool>();
    if (value.is_number_integer())
        return value.get<long long>() + 1;
    if (value.is_number_float())
        return value.get<double>() / 2 + 0.25;
    if (value.is_string()) {
        const std::string v = value.get<std::string>();
        const bool planner = std::find(plannerNames().begin(), plannerNames().end(), v) != plannerNames().end();
        PipelineUnits units;
        if (pipelineUnitsFromString(v, units))
            return v == "layers" ? "layers+embedding" : "layers";
        if (planner) {
            for (const std::string &name : plannerNames())
                if (name != v)
                    return name;
        } else {
            for (const FrameworkProfile &f : frameworkProfiles())
                if (f.name != v)
                    return f.name;
        }
        return nullptr;
    }
    if (value.is_array() && value.size() > 1) {
        Json shorter = value;
        shorter.erase(shorter.begin());
        return shorter;
    }
    if (value.is_array() && value.size() == 1 && value[0].is_number_integer())
        return Json::array({value[0].get<long long>() + 1});
    return nullptr;
}

// A small instance on which the unrestricted optimum uses tp > 1, dp > 1, micro-batch 4,
// 1F1B and more than half of the V100s' memory (asserted in behaviourBaseline), so that
// each restriction below changes the answer.
const Topology &smallCluster()
{
    static const Topology t = resolveCluster("paper-v100-8").value();
    return t;
}

const ModelProfile &smallModel()
{
    static const ModelProfile m = fixtures::llama2_7b(1024, 16);
    return m;
}

PlanResult planWith(const SearchSettings &s, const Topology &topo = smallCluster(),
                    const ModelProfile &model = smallModel())
{
    const std::unique_ptr<Planner> planner = makePlanner(s.planner);
    if (!planner)
        return {};
    // The instance was chosen for the recipes' stack (every overlap on), where its optimum
    // uses tp, dp and pipelining at once; under the defaults stack it has no replicas.
    SearchSettings tuned = s;
    tuned.stack = Stack::Tuned;
    return planner->plan(topo, model, searchOptionsFrom(tuned, model));
}

int maxTp(const Plan &p)
{
    int tp = 0;
    for (const StagePlan &s : p.stages)
        tp = std::max(tp, s.tp);
    return tp;
}

// Largest fraction of its device's full memory that any used device needs.
double peakFraction(const Report &r, const Topology &topo)
{
    double f = 0;
    for (const DeviceReport &d : r.devices)
        if (d.stage >= 0)
            f = std::max(f, d.total / topo.spec(d.device).memoryBytes);
    return f;
}

// A 4-device, 3-level tree and a GPT with 2 blocks: small enough to enumerate.
Topology tinyCluster()
{
    return makeCluster("fat-tree", {{"devices_per_node", 2}, {"nodes_per_rack", 2}, {"racks", 1}}).value();
}

// coretest::tinyGptConfig at twice the width and four times the vocabulary.
ModelProfile tinyModel(int blocks = 2)
{
    ModelConfig c = coretest::tinyGptConfig(blocks);
    c.name = "tiny-gpt";
    c.hidden = 512;
    c.ffnHidden = 2048;
    c.vocab = 4000;
    c.maxPositions = 256;
    return buildProfile(c);
}

} // namespace

TEST(SearchSettings, optionsMapEveryField)
{
    ModelProfile model = smallModel();
    model.globalBatch = 48;
    model.seqLength = 768;
    SearchSettings s = everyFieldChanged();
    // Strategies on, so that the candidate lists pass through unchanged.
    s.allowTp = s.allowPp = s.allowDp = s.allowEp = s.allowCp = true;
    const SearchOptions o = searchOptionsFrom(s, model);
    ASSERT_EQ(o.globalBatch, 48);
    ASSERT_EQ(o.seqLength, 768);
    ASSERT_EQ(o.microBatches, (std::vector<int>{3, 1}));
    ASSERT_EQ(o.schedules, (std::vector<Schedule>{Schedule::Interleaved, Schedule::OneFOneB}));
    ASSERT_EQ(o.virtualStages, (std::vector<int>{4, 6}));
    ASSERT_EQ(o.recomputeModes, (std::vector<Recompute>{Recompute::Full, Recompute::None}));
    ASSERT_EQ(o.cpMinTokensPerRank, 0);
    ASSERT_EQ(o.maxStages, 6);
    ASSERT_EQ(o.allowZero, false);
    ASSERT_EQ(o.allowRecompute, false);
    ASSERT_EQ(o.allowSp, false);
    ASSERT_EQ(o.tpCandidates, (std::vector<int>{4, 2}));
    ASSERT_EQ(o.epCandidates, (std::vector<int>{2}));
    ASSERT_EQ(o.cpCandidates, (std::vector<int>{1, 2}));
    ASSERT_TRUE(o.dpCandidates.empty());  // every dp that divides the batch
    ASSERT_EQ(o.layouts, (std::vector<Layout>{Layout::ReplicasInside}));
    ASSERT_EQ(o.pipelineUnits, PipelineUnits::LayersEmbeddingLoss);
    ASSERT_EQ(o.evaluationBudget, 750);
    ASSERT_EQ(o.seed, 42u);
    ASSERT_EQ(o.topK, 1);  // top_k is the nest planner's; "exhaustive" returns one plan
    SearchSettings nestK = s;
    nestK.planner = "nest";
    ASSERT_EQ(searchOptionsFrom(nestK, model).topK, 5);
    ASSERT_QFUZZY_EQ(o.memoryHeadroom, 0.125);
    // The headroom, the framework, the stack, FP8 attention, the recompute modules and the MoE
    // options reach the evaluator; every other cost option keeps its default.
    CostOptions expectedCost;
    expectedCost.memoryHeadroom = 0.125;
    expectedCost.framework = Framework::Fsdp;
    expectedCost.stack = Stack::Tuned;
    expectedCost.fp8Attention = true;
    expectedCost.recomputeModules = s.recomputeModules;
    ASSERT_FALSE(expectedCost.recomputeModules.isDefault());
    expectedCost.moeImbalance = 1.25;
    expectedCost.moeCapacityFactor = 1.5;
    expectedCost.moeHierarchicalDispatch = true;
    expectedCost.moeA2aOverlap = true;
    ASSERT_TRUE(o.cost == expectedCost);

    // The opposite booleans map as well.
    SearchSettings t;
    t.allowZero = t.allowRecompute = t.allowSequenceParallel = true;
    const SearchOptions p = searchOptionsFrom(t, model);
    ASSERT_TRUE(p.allowZero && p.allowRecompute && p.allowSp);
    ASSERT_EQ(p.maxStages, 0);
    // The defaults of the settings are the planner's defaults.
    const SearchOptions plannerDefaults;
    ASSERT_EQ(p.evaluationBudget, plannerDefaults.evaluationBudget);
    ASSERT_EQ(p.seed, plannerDefaults.seed);
    ASSERT_EQ(p.topK, plannerDefaults.topK);
    ASSERT_EQ(p.virtualStages, plannerDefaults.virtualStages);
    ASSERT_EQ(p.recomputeModes, plannerDefaults.recomputeModes);
    ASSERT_EQ(p.cpCandidates, plannerDefaults.cpCandidates);
    ASSERT_EQ(p.cpMinTokensPerRank, plannerDefaults.cpMinTokensPerRank);
    ASSERT_EQ(p.virtualStages, (std::vector<int>{2, 3, 4}));
    ASSERT_EQ(p.cpCandidates, (std::vector<int>{1, 2, 4, 8, 16}));
    ASSERT_EQ(p.cpMinTokensPerRank, 4096);
    ASSERT_EQ(p.recomputeModes, (std::vector<Recompute>{Recompute::None, Recompute::Selective, Recompute::Full}));
    ASSERT_QFUZZY_EQ(p.memoryHeadroom, 0.0);
}

TEST(SearchSettings, strategySwitches)
{
    const ModelProfile &model = smallModel();
    SearchSettings s;
    s.tpCandidates = {2, 4};
    s.epCandidates = {4};
    s.cpCandidates = {1, 2};
    s.maxStages = 5;

    s.allowTp = false;
    ASSERT_EQ(searchOptionsFrom(s, model).tpCandidates, (std::vector<int>{1}));
    s.allowEp = false;
    ASSERT_EQ(searchOptionsFrom(s, model).epCandidates, (std::vector<int>{1}));
    s.allowCp = false;
    ASSERT_EQ(searchOptionsFrom(s, model).cpCandidates, (std::vector<int>{1}));
    s.allowPp = false;
    ASSERT_EQ(searchOptionsFrom(s, model).maxStages, 1);
    s.allowDp = false;
    ASSERT_EQ(searchOptionsFrom(s, model).dpCandidates, (std::vector<int>{1}));
    // Switching off keeps the lists in the settings (and in their JSON) ...
    ASSERT_EQ(s.tpCandidates, (std::vector<int>{2, 4}));
    ASSERT_EQ(searchSettingsFromJson(searchSettingsToJson(s), "search"), s);

    // ... so switching back on restores them.
    s.allowTp = s.allowEp = s.allowCp = s.allowPp = s.allowDp = true;
    const SearchOptions o = searchOptionsFrom(s, model);
    ASSERT_EQ(o.tpCandidates, (std::vector<int>{2, 4}));
    ASSERT_EQ(o.epCandidates, (std::vector<int>{4}));
    ASSERT_EQ(o.cpCandidates, (std::vector<int>{1, 2}));
    ASSERT_EQ(o.maxStages, 5);
    ASSERT_TRUE(o.dpCandidates.empty());
}

TEST(SearchSettings, jsonRoundTrip)
{
    const SearchSettings defaults;
    ASSERT_EQ(searchSettingsFromJson(searchSettingsToJson(defaults), "search"), defaults);
    ASSERT_EQ(searchSettingsFromJson(Json::object(), "search"), defaults);  // every key optional

    const SearchSettings changed = everyFieldChanged();
    const Json j = searchSettingsToJson(changed);
    ASSERT_EQ(searchSettingsFromJson(j, "search"), changed);
    // Text round trip too (what a workspace file holds).
    ASSERT_EQ(searchSettingsFromJson(Json::parse(j.dump(2)), "search"), changed);

    // everyFieldChanged() really changes every key, so the round trip above covers each one;
    // the defaults leave out the keys written only when set (precisions, fp8_recipe,
    // etp_candidates and "target", issues 46 and 47; "stack" when not the default, issue 50; so
    // that older workspaces save as they were).
    const Json d = searchSettingsToJson(defaults);
    ASSERT_EQ(j.size(), d.size() + 11);
    ASSERT_FALSE(d.contains("fp8_attention"));  // written only when set
    ASSERT_EQ(j.at("fp8_attention"), true);
    ASSERT_FALSE(d.contains("recompute_modules"));  // written only when not core_attn alone
    ASSERT_EQ(j.at("recompute_modules"), Json::array({"moe_act", "layernorm"}));
    ASSERT_FALSE(d.contains("etp_candidates"));
    ASSERT_FALSE(d.contains("stack"));  // issue 50: written only when not the default
    ASSERT_EQ(j.at("stack"), "tuned");
    ASSERT_EQ(j.at("etp_candidates"), Json::array({1, 2}));
    ASSERT_FALSE(d.contains("precisions"));
    ASSERT_FALSE(d.contains("fp8_recipe"));
    ASSERT_FALSE(d.contains("target"));
    ASSERT_EQ(j.at("precisions"), Json::array({"bf16", "mxfp8"}));
    ASSERT_EQ(j.at("fp8_recipe"), "blockwise");
    ASSERT_EQ(j.at("target"), "nemo");
    // The MoE options (this stop): written only when not the default, so that older
    // workspaces save as they were.
    for (const char *key : {"moe_imbalance", "capacity_factor", "moe_dispatcher", "moe_a2a_overlap"})
        ASSERT_FALSE(d.contains(key)) << key;
    ASSERT_EQ(j.at("moe_imbalance"), 1.25);
    ASSERT_EQ(j.at("capacity_factor"), 1.5);
    ASSERT_EQ(j.at("moe_dispatcher"), "deepep");
    ASSERT_EQ(j.at("moe_a2a_overlap"), true);
    for (const auto &item : d.items())
        ASSERT_TRUE(j.at(item.key()) != item.value()) << item.key().c_str();

    // One JSON key per field: adding a field to SearchSettings without a key (or a key
    // without a field) fails here.
    constexpr std::size_t fields = aggregateFieldCount<SearchSettings>();
    ASSERT_EQ(fields, std::size_t(36));
    ASSERT_EQ(j.size(), fields);

    // An unknown target is refused with its path.
    Json bad = j;
    bad["target"] = "slurm";
    try {
        searchSettingsFromJson(bad, "search");
        FAIL() << "target \"slurm\" accepted";
    } catch (const JsonError &e) {
        ASSERT_NE(std::string(e.what()).find("target"), std::string::npos) << e.what();
    }
}

TEST(SearchSettings, oldSingleDepthStillReads)
{
    // Workspaces written when the interleaving depth was one number.
    const SearchSettings s = searchSettingsFromJson(Json{{"virtual_stages", 3}}, "search");
    ASSERT_EQ(static_cast<const std::vector<int> &>(s.virtualStages), (std::vector<int>{3}));
    ASSERT_TRUE(searchSettingsToJson(s).at("virtual_stages") == Json::array({3}))
        << searchSettingsToJson(s).at("virtual_stages").dump();
    ASSERT_EQ(searchOptionsFrom(s, smallModel()).virtualStages, (std::vector<int>{3}));
    // An int assigned in code means the same single depth.
    SearchSettings t;
    t.virtualStages = 3;
    ASSERT_EQ(t, s);
}

TEST(SearchSettings, everyJsonKeyIsAField)
{
    // Each key of the default JSON is accepted, and changing it alone changes the parsed
    // settings in exactly that key (so no two keys share a field and none is ignored).
    const SearchSettings defaults;
    const Json d = searchSettingsToJson(defaults);
    ASSERT_TRUE(d.size() >= 20);
    for (const auto &item : d.items()) {
        const std::string &key = item.key();
        const Json value = altered(item.value());
        ASSERT_TRUE(!value.is_null()) << ("no other value for " + key).c_str();
        ASSERT_TRUE(value != item.value()) << key.c_str();
        const Json one{{key, value}};
        SearchSettings parsed;
        try {
            parsed = searchSettingsFromJson(one, "search");
        } catch (const JsonError &e) {
            FAIL() << key + " " + value.dump() + ": " + e.what();
        }
        ASSERT_TRUE(!(parsed == defaults)) << key.c_str();
        Json expected = d;
        expected[key] = value;
        ASSERT_TRUE(searchSettingsToJson(parsed) == expected)
            << (key + ": " + searchSettingsToJson(parsed).dump()).c_str();
        // The key alone, at its default value, is accepted and changes nothing.
        ASSERT_EQ(searchSettingsFromJson(Json{{key, item.value()}}, "search"), defaults);
    }
}

namespace {

struct JsonErrorRow {
    std::string name;
    std::string json;
    std::string path;
    std::string reason;  // a fragment of the reason
};

void PrintTo(const JsonErrorRow &row, std::ostream *os) { *os << row.name; }

const std::vector<JsonErrorRow> jsonErrorRows = {
    {"not an object", "[1]", "search", "expected an object"},
    {"unknown key", R"({"alow_tp": true})", "search.alow_tp", "unknown key"},
    {"unknown planner", R"({"planner": "greedy"})", "search.planner", "greedy"},
    {"planner not a string", R"({"planner": 1})", "search.planner", "expected a string"},
    {"virtual_stages 0", R"({"virtual_stages": 0})", "search.virtual_stages", "between 2 and 64"},
    {"virtual_stages 1", R"({"virtual_stages": 1})", "search.virtual_stages", "between 2 and 64"},
    {"virtual_stages 65", R"({"virtual_stages": 65})", "search.virtual_stages", "between 2 and 64"},
    {"virtual_stages 2.5", R"({"virtual_stages": 2.5})", "search.virtual_stages", "whole number"},
    {"virtual_stages entry 1", R"({"virtual_stages": [2, 1]})", "search.virtual_stages[1]", "between 2 and 64"},
    {"virtual_stages entry 65", R"({"virtual_stages": [65]})", "search.virtual_stages[0]", "between 2 and 64"},
    {"virtual_stages duplicate", R"({"virtual_stages": [3, 3]})", "search.virtual_stages[1]", "duplicate value 3"},
    {"virtual_stages empty", R"({"virtual_stages": []})", "search.virtual_stages", "at least one"},
    {"recompute_modes entry", R"({"recompute_modes": ["none", "partial"]})", "search.recompute_modes[1]",
     "\"selective\""},
    {"recompute_modes not a string", R"({"recompute_modes": [true]})", "search.recompute_modes[0]", "\"full\""},
    {"recompute_modes duplicate", R"({"recompute_modes": ["full", "FULL"]})", "search.recompute_modes[1]",
     "duplicate mode \"full\""},
    {"recompute_modes empty", R"({"recompute_modes": []})", "search.recompute_modes", "at least one"},
    {"recompute_modes not a list", R"({"recompute_modes": "full"})", "search.recompute_modes", "expected an array"},
    {"cp_min_tokens_per_rank -1", R"({"cp_min_tokens_per_rank": -1})", "search.cp_min_tokens_per_rank", "between 0"},
    {"max_stages -1", R"({"max_stages": -1})", "search.max_stages", "between 0"},
    {"moe_imbalance below 1", R"({"moe_imbalance": 0.5})", "search.moe_imbalance", "at least 1"},
    {"moe_imbalance above 64", R"({"moe_imbalance": 65})", "search.moe_imbalance", "at most 64"},
    {"moe_imbalance not a number", R"({"moe_imbalance": "1.2"})", "search.moe_imbalance", "expected a number"},
    {"capacity_factor negative", R"({"capacity_factor": -1})", "search.capacity_factor", "at least 0"},
    {"moe_dispatcher unknown", R"({"moe_dispatcher": "nccl"})", "search.moe_dispatcher",
     "unknown dispatcher 'nccl' (known: alltoall, deepep)"},
    {"moe_a2a_overlap not a boolean", R"({"moe_a2a_overlap": "on"})", "search.moe_a2a_overlap", "expected true or false"},
    {"top_k 0", R"({"top_k": 0})", "search.top_k", "between 1 and 100"},
    {"top_k 101", R"({"top_k": 101})", "search.top_k", "between 1 and 100"},
    {"top_k 2.5", R"({"top_k": 2.5})", "search.top_k", "whole number"},
    {"pipeline_units unknown", R"({"pipeline_units": "layers+loss"})", "search.pipeline_units",
     "\"layers+embedding+loss\", found \"layers+loss\""},
    {"layouts entry", R"({"layouts": ["outside", "sideways"]})", "search.layouts[1]", "\"outside\" or \"inside\""},
    {"layouts entry not a string", R"({"layouts": [1]})", "search.layouts[0]", "\"inside\""},
    {"layouts empty", R"({"layouts": []})", "search.layouts", "at least one"},
    {"layouts not a list", R"({"layouts": "inside"})", "search.layouts", "expected an array"},
    {"schedules entry", R"({"schedules": ["1f1b", "zb"]})", "search.schedules[1]", "gpipe"},
    {"schedules empty", R"({"schedules": []})", "search.schedules", "at least one"},
    {"duplicate tp", R"({"tp_candidates": [1, 2, 2]})", "search.tp_candidates[2]", "duplicate value 2"},
    {"duplicate micro-batch", R"({"micro_batches": [4, 4]})", "search.micro_batches[1]", "duplicate"},
    {"tp 0", R"({"tp_candidates": [0]})", "search.tp_candidates[0]", "between 1"},
    {"micro-batch 0", R"({"micro_batches": [1, 0]})", "search.micro_batches[1]", "between 1"},
    {"micro_batches empty", R"({"micro_batches": []})", "search.micro_batches", "at least one"},
    {"tp_candidates empty", R"({"tp_candidates": []})", "search.tp_candidates", "at least one"},
    {"ep_candidates empty", R"({"ep_candidates": []})", "search.ep_candidates", "at least one"},
    {"cp_candidates empty", R"({"cp_candidates": []})", "search.cp_candidates", "at least one"},
    {"negative headroom", R"({"memory_headroom": -0.1})", "search.memory_headroom", "must not be negative"},
    {"headroom 1", R"({"memory_headroom": 1})", "search.memory_headroom", "below 1"},
    {"headroom a string", R"({"memory_headroom": "10%"})", "search.memory_headroom", "expected a number"},
    {"allow_tp not a bool", R"({"allow_tp": "yes"})", "search.allow_tp", "true or false"},
    {"allow_recompute 1", R"({"allow_recompute": 1})", "search.allow_recompute", "true or false"},
    {"unknown framework", R"({"framework": "jax"})", "search.framework",
     "unknown framework 'jax' (known: megatron-core, megatron-lm"},
};

class SearchSettingsJsonErrors : public ::testing::TestWithParam<JsonErrorRow> {};

} // namespace

TEST_P(SearchSettingsJsonErrors, jsonErrorsNameThePath)
{
    const JsonErrorRow &row = GetParam();
    const Json j = Json::parse(row.json);
    try {
        const SearchSettings s = searchSettingsFromJson(j, "search");
        FAIL() << "accepted " << row.json << " as " << searchSettingsToJson(s).dump();
    } catch (const JsonError &e) {
        ASSERT_EQ(e.path(), row.path);
        ASSERT_TRUE(coretest::contains(e.reason(), row.reason)) << e.what();
        // The message a user sees starts with the path.
        ASSERT_TRUE(std::string_view(e.what()).starts_with(row.path + ": ")) << e.what();
    }
}

INSTANTIATE_TEST_SUITE_P(Rows, SearchSettingsJsonErrors, ::testing::ValuesIn(jsonErrorRows),
                         [](const auto &p) { return rowName(p.param.name); });

TEST(SearchSettings, plannerFactory)
{
    ASSERT_TRUE(!plannerNames().empty());
    ASSERT_TRUE(std::find(plannerNames().begin(), plannerNames().end(), SearchSettings{}.planner) !=
            plannerNames().end());
    for (const std::string &name : plannerNames()) {
        const std::unique_ptr<Planner> p = makePlanner(name);
        ASSERT_TRUE(p != nullptr) << name.c_str();
        ASSERT_EQ(p->name(), name);
        // Every listed name is accepted by the JSON reader too.
        ASSERT_EQ(searchSettingsFromJson(Json{{"planner", name}}, "search").planner, name);
    }
    ASSERT_TRUE(makePlanner("") == nullptr);
    ASSERT_TRUE(makePlanner("NEST") == nullptr);
    ASSERT_TRUE(makePlanner("greedy") == nullptr);
}

TEST(SearchSettings, behaviourBaseline)
{
    // The unrestricted optimum on the small instance, so that each restriction tested below
    // really changes the plan (a failure here means the instance must be re-chosen).
    const PlanResult r = planWith(SearchSettings{});
    ASSERT_TRUE(r.found && r.verified) << r.message.c_str();
    ASSERT_TRUE(maxTp(r.plan) > 1);
    ASSERT_TRUE(r.plan.dp > 1);
    ASSERT_TRUE(r.plan.microBatch != 2);
    ASSERT_TRUE(r.plan.schedule != Schedule::GPipe);
    ASSERT_TRUE(peakFraction(r.report, smallCluster()) > 0.5) << peakFraction(r.report, smallCluster());
    // Without data parallelism the optimum is a pipeline (the allowPp check needs one).
    SearchSettings noDp;
    noDp.allowDp = false;
    const PlanResult p = planWith(noDp);
    ASSERT_TRUE(p.found && p.verified) << p.message.c_str();
    ASSERT_TRUE(p.plan.pipelineDepth() >= 2);
}

TEST(SearchSettings, behaviourRestrictions)
{
    const PlanResult best = planWith(SearchSettings{});
    ASSERT_TRUE(best.found);
    const auto check = [&](const SearchSettings &s, const char *what) -> PlanResult {
        PlanResult r = planWith(s);
        if (!r.found || !r.verified)
            std::fprintf(stderr, "%s: %s\n", what, r.message.c_str());
        return r;  // callers check found, verified, and that it is no faster than `best`
    };
    {
        SearchSettings s;
        s.allowTp = false;
        const PlanResult r = check(s, "allowTp=false");
        ASSERT_TRUE(r.found && r.verified && r.objective >= best.objective);
        for (const StagePlan &st : r.plan.stages)
            ASSERT_EQ(st.tp, 1);
    }
    {
        SearchSettings s;
        s.allowDp = false;
        const PlanResult r = check(s, "allowDp=false");
        ASSERT_TRUE(r.found && r.verified && r.objective >= best.objective);
        ASSERT_EQ(r.plan.dp, 1);
        for (const StagePlan &st : r.plan.stages)
            ASSERT_EQ(int(st.devices.size()), 1);

        s.allowPp = false;  // no dp and no pp: one stage on one replica
        const PlanResult one = check(s, "allowDp=allowPp=false");
        ASSERT_TRUE(one.found && one.verified && one.objective >= r.objective);
        ASSERT_EQ(one.plan.dp, 1);
        ASSERT_EQ(int(one.plan.stages.size()), 1);
        ASSERT_EQ(one.plan.pipelineDepth(), 1);

        s.allowPp = true;  // a stage limit applies when pp is on: one below the optimum's depth
        s.maxStages = r.plan.pipelineDepth() - 1;
        ASSERT_TRUE(s.maxStages >= 1);  // behaviourBaseline: the optimum without dp is a pipeline
        const PlanResult capped = check(s, "allowDp=false maxStages=depth-1");
        ASSERT_TRUE(capped.found && capped.verified);
        ASSERT_TRUE(capped.plan.pipelineDepth() <= s.maxStages);
        ASSERT_TRUE(capped.objective >= r.objective);
    }
    {
        SearchSettings s;
        s.allowPp = false;
        const PlanResult r = check(s, "allowPp=false");
        ASSERT_TRUE(r.found && r.verified && r.objective >= best.objective);
        ASSERT_EQ(int(r.plan.stages.size()), 1);
    }
    {
        SearchSettings s;
        s.schedules = {Schedule::GPipe};
        const PlanResult r = check(s, "schedules={GPipe}");
        ASSERT_TRUE(r.found && r.verified && r.objective >= best.objective);
        ASSERT_EQ(r.plan.schedule, Schedule::GPipe);
    }
    {
        SearchSettings s;
        s.microBatches = {2};
        const PlanResult r = check(s, "microBatches={2}");
        ASSERT_TRUE(r.found && r.verified && r.objective >= best.objective);
        ASSERT_EQ(r.plan.microBatch, 2);
        ASSERT_EQ(r.plan.numMicroBatches() * 2 * r.plan.dp, 16);
    }
    {
        SearchSettings s;
        s.allowZero = false;
        s.allowRecompute = false;
        const PlanResult r = check(s, "allowZero=allowRecompute=false");
        ASSERT_TRUE(r.found && r.verified && r.objective >= best.objective);
        for (const StagePlan &st : r.plan.stages) {
            ASSERT_EQ(st.zero, 0);
            ASSERT_TRUE(st.recompute == Recompute::None);
        }
    }
}

TEST(SearchSettings, memoryHeadroomHolds)
{
    const Topology &topo = smallCluster();
    SearchSettings s;
    s.memoryHeadroom = 0.5;
    const PlanResult r = planWith(s);
    ASSERT_TRUE(r.found && r.verified) << r.message.c_str();
    ASSERT_TRUE(r.report.feasible);
    int used = 0;
    for (const DeviceReport &d : r.report.devices) {
        const double full = topo.spec(d.device).memoryBytes;
        // The report's capacity is what the headroom leaves ...
        ASSERT_QFUZZY_EQ(d.capacity, full * 0.5);
        if (d.stage < 0)
            continue;
        ++used;
        // ... and no device of the plan needs more than that.
        ASSERT_TRUE(d.total <= 0.5 * full) << "device " << d.device << ": " << d.total << " of " << full << " bytes";
    }
    ASSERT_EQ(used, r.report.devicesUsed);
    ASSERT_TRUE(r.report.peakMemoryBytes <= 0.5 * topo.spec(0).memoryBytes);
    // The unrestricted optimum needs more than half (behaviourBaseline), so this is a
    // different, slower plan.
    const PlanResult best = planWith(SearchSettings{});
    ASSERT_TRUE(peakFraction(best.report, topo) > 0.5);
    ASSERT_TRUE(r.objective > best.objective);
}

namespace {

struct ExhaustiveRow {
    std::string name;
    SearchSettings settings;
    double memoryBytes;  // per device; 0 = the template's H100
    int blocks;          // transformer blocks of the tiny GPT
};

void PrintTo(const ExhaustiveRow &row, std::ostream *os) { *os << row.name; }

std::vector<ExhaustiveRow> exhaustiveRows()
{
    std::vector<ExhaustiveRow> rows;
    rows.push_back({"defaults", SearchSettings{}, 0.0, 2});
    SearchSettings narrow;
    narrow.allowTp = false;
    narrow.microBatches = {1, 2};
    narrow.schedules = {Schedule::OneFOneB, Schedule::GPipe};
    rows.push_back({"no tp, mb 1-2, 1f1b+gpipe", narrow, 0.0, 2});
    SearchSettings tight;
    tight.allowDp = false;
    tight.maxStages = 2;
    tight.memoryHeadroom = 0.3;
    tight.allowZero = false;
    // 1.5 GB devices: 30 % headroom leaves 1.05 GB, less than the unrestricted optimum
    // needs (checked below), so the headroom decides the plan.
    rows.push_back({"no dp, <= 2 stages, headroom 0.3, no zero", tight, 1.5e9, 2});
    SearchSettings interleaved;
    interleaved.schedules = {Schedule::Interleaved};
    interleaved.virtualStages = 2;
    interleaved.allowRecompute = false;
    // 4 blocks: the interleaved chunks cut the blocks (pp 2 x depth 2).
    rows.push_back({"interleaved alone", interleaved, 0.0, 4});
    SearchSettings modes;
    modes.recomputeModes = {Recompute::Selective, Recompute::Full};
    modes.allowDp = false;
    rows.push_back({"recompute selective or full, no dp", modes, 0.0, 2});
    return rows;
}

class SearchSettingsExhaustive : public ::testing::TestWithParam<ExhaustiveRow> {};

} // namespace

TEST_P(SearchSettingsExhaustive, exhaustiveAgreesWithNest)
{
    const SearchSettings &settings = GetParam().settings;
    const double memoryBytes = GetParam().memoryBytes;
    const int blocks = GetParam().blocks;
    Topology topo = tinyCluster();
    if (memoryBytes > 0)
        topo.deviceTypes[0].memoryBytes = memoryBytes;
    ASSERT_EQ(topo.deviceCount(), 4);
    const ModelProfile model = tinyModel(blocks);
    ASSERT_EQ(model.layerCount(), blocks + 2);  // embedding, blocks, head

    SearchSettings nest = settings;
    nest.planner = "nest";
    SearchSettings exhaustive = settings;
    exhaustive.planner = "exhaustive";
    const PlanResult n = planWith(nest, topo, model);
    const PlanResult e = planWith(exhaustive, topo, model);
    ASSERT_TRUE(n.found && n.verified) << n.message.c_str();
    ASSERT_TRUE(e.found && e.verified) << e.message.c_str();
    ASSERT_TRUE(std::abs(n.objective - e.objective) <= 1e-9 * e.objective) 
        << "nest " << std::setprecision(17) << n.objective << " s, exhaustive " << e.objective << " s";
    // Both honour the settings.
    for (const PlanResult *r : {&n, &e}) {
        ASSERT_TRUE(std::find(settings.microBatches.begin(), settings.microBatches.end(), r->plan.microBatch) !=
                settings.microBatches.end());
        ASSERT_TRUE(std::find(settings.schedules.begin(), settings.schedules.end(), r->plan.schedule) !=
                settings.schedules.end());
        if (!settings.allowTp) {
            ASSERT_EQ(maxTp(r->plan), 1);
        }
        if (!settings.allowDp) {
            ASSERT_EQ(r->plan.dp, 1);
        }
        if (settings.maxStages > 0) {
            ASSERT_TRUE(r->plan.pipelineDepth() <= settings.maxStages);
        }
        for (const StagePlan &st : r->plan.stages) {
            const auto &modes = settings.recomputeModes;
            if (settings.allowRecompute)
                ASSERT_TRUE(std::find(modes.begin(), modes.end(), st.recompute) != modes.end());
            else
                ASSERT_TRUE(st.recompute == Recompute::None);
        }
        for (const DeviceReport &d : r->report.devices) {
            ASSERT_QFUZZY_EQ(d.capacity, topo.spec(d.device).memoryBytes * (1 - settings.memoryHeadroom));
            ASSERT_TRUE(d.total <= d.capacity);
        }
    }
    if (settings.memoryHeadroom > 0) {
        SearchSettings none = nest;
        none.memoryHeadroom = 0;
        const PlanResult free = planWith(none, topo, model);
        ASSERT_TRUE(free.found);
        ASSERT_TRUE(free.objective < n.objective) << "the headroom does not bind on this row";
    }
}

INSTANTIATE_TEST_SUITE_P(Rows, SearchSettingsExhaustive, ::testing::ValuesIn(exhaustiveRows()),
                         [](const auto &p) { return rowName(p.param.name); });

TEST(SearchSettings, insideLayoutAloneAtDpOne)
{
    // At dp = 1 the two layouts are the same placement (docs/planner.md §2), so asking for
    // "inside" alone must still search dp = 1 (PlanSpace once dropped dp = 1 unless "outside"
    // was listed too; with data parallelism off nothing was left).
    SearchSettings s;
    s.allowDp = false;
    s.layouts = {Layout::ReplicasInside};
    const PlanResult inside = planWith(s);
    s.layouts = {Layout::ReplicasOutside};
    const PlanResult outside = planWith(s);
    ASSERT_TRUE(outside.found) << outside.message.c_str();
    ASSERT_TRUE(inside.found) << inside.message.c_str();
    ASSERT_QFUZZY_EQ(inside.objective, outside.objective);
}

