#include "SearchSettings.h"

#include "PrecisionSearch.h"

#include "Evaluator.h"
#include "Limits.h"
#include "ModelProfile.h"

#include <algorithm>
#include <limits>
#include <unordered_set>

namespace nest {

Result<std::vector<Precision>> searchPrecisionsFor(const SearchSettings &s, const Topology &topo, Framework framework)
{
    return searchPrecisions(s.precisions, s.fp8Recipe.value_or(Fp8Recipe::Delayed), s.fp8Recipe.has_value(), topo,
                            framework);
}

SearchOptions searchOptionsFrom(const SearchSettings &s, const ModelProfile &model)
{
    SearchOptions o;
    o.globalBatch = model.globalBatch;
    o.seqLength = model.seqLength;
    o.microBatches = s.microBatches;
    o.schedules = s.schedules;
    o.virtualStages = s.virtualStages;
    o.maxStages = s.allowPp ? s.maxStages : 1;
    o.pipelineUnits = s.pipelineUnits;
    o.evaluationBudget = s.mcmcBudget;
    o.seed = static_cast<unsigned long long>(s.seed);
    o.topK = s.planner == "nest" ? s.topK : 1;
    o.allowZero = s.allowZero;
    o.allowRecompute = s.allowRecompute;
    o.recomputeModes = s.recomputeModes;
    o.allowSp = s.allowSequenceParallel;
    o.tpCandidates = s.allowTp ? s.tpCandidates : std::vector<int>{1};
    o.epCandidates = s.allowEp ? s.epCandidates : std::vector<int>{1};
    o.etpCandidates = s.etpCandidates;
    o.cpCandidates = s.allowCp ? s.cpCandidates : std::vector<int>{1};
    o.cpMinTokensPerRank = s.cpMinTokensPerRank;
    if (!s.allowDp)
        o.dpCandidates = {1};
    o.layouts = s.layouts;
    o.memoryHeadroom = s.memoryHeadroom;
    o.cost = settingsCostOptions(s);
    return o;
}

CostOptions settingsCostOptions(const SearchSettings &s)
{
    CostOptions c;
    c.memoryHeadroom = s.memoryHeadroom;
    c.framework = s.framework;
    c.stack = s.stack;
    c.fp8Attention = s.fp8Attention;
    c.recomputeModules = s.recomputeModules;
    c.moeImbalance = s.moeImbalance;
    c.moeCapacityFactor = s.capacityFactor;
    c.moeHierarchicalDispatch = s.moeHierarchicalDispatch;
    c.moeA2aOverlap = s.moeA2aOverlap;
    return c;
}

bool layoutFromString(const std::string &text, Layout &out)
{
    for (Layout l : {Layout::ReplicasOutside, Layout::ReplicasInside}) {
        if (text == toString(l)) {
            out = l;
            return true;
        }
    }
    return false;
}

Json searchSettingsToJson(const SearchSettings &s)
{
    Json schedules = Json::array();
    for (Schedule sc : s.schedules)
        schedules.push_back(toString(sc));
    Json layouts = Json::array();
    for (Layout l : s.layouts)
        layouts.push_back(toString(l));
    Json recompute = Json::array();
    for (Recompute r : s.recomputeModes)
        recompute.push_back(toString(r));
    Json out{{"planner", s.planner},
                {"micro_batches", s.microBatches},
                {"schedules", schedules},
                {"virtual_stages", static_cast<const std::vector<int> &>(s.virtualStages)},
                {"max_stages", s.maxStages},
                {"memory_headroom", s.memoryHeadroom},
                {"framework", toString(s.framework)},
                {"allow_tp", s.allowTp},
                {"allow_pp", s.allowPp},
                {"allow_dp", s.allowDp},
                {"allow_ep", s.allowEp},
                {"allow_cp", s.allowCp},
                {"allow_sp", s.allowSequenceParallel},
                {"allow_zero", s.allowZero},
                {"allow_recompute", s.allowRecompute},
                {"recompute_modes", recompute},
                {"tp_candidates", s.tpCandidates},
                {"ep_candidates", s.epCandidates},
                {"cp_candidates", s.cpCandidates},
                {"cp_min_tokens_per_rank", s.cpMinTokensPerRank},
                {"layouts", layouts},
                {"pipeline_units", toString(s.pipelineUnits)},
                {"mcmc_budget", s.mcmcBudget},
                {"seed", s.seed},
                {"top_k", s.topK}};
    if (s.stack != SearchSettings{}.stack)  // written only when not the default
        out["stack"] = toString(s.stack);
    if (s.fp8Attention)  // written only when set
        out["fp8_attention"] = true;
    if (!s.recomputeModules.isDefault())  // written only when not the default
        out["recompute_modules"] = recomputeModuleNames(s.recomputeModules);
    if (!s.precisions.empty()) {  // absent = every supported precision
        Json list = Json::array();
        for (NumberFormat f : s.precisions)
            list.push_back(toString(f));
        out["precisions"] = list;
    }
    if (s.fp8Recipe)
        out["fp8_recipe"] = toString(*s.fp8Recipe);
    if (s.etpCandidates != SearchSettings{}.etpCandidates)  // written only when set
        out["etp_candidates"] = s.etpCandidates;
    if (s.moeImbalance != SearchSettings{}.moeImbalance)  // the MoE keys: written only when set
        out["moe_imbalance"] = s.moeImbalance;
    if (s.capacityFactor != 0)
        out["capacity_factor"] = s.capacityFactor;
    if (s.moeHierarchicalDispatch)
        out["moe_dispatcher"] = moeDispatcherName(true);
    if (s.moeA2aOverlap)
        out["moe_a2a_overlap"] = true;
    if (!s.target.empty())
        out["target"] = s.target;  // written only when set: older workspaces stay as they were
    return out;
}

namespace {

// One whole number of `key` within `range` (Limits.h), or `fallback` when absent.
long long intIn(const Json &j, const char *key, const std::string &path, const Range &range, long long fallback)
{
    return getInt(j, key, path, static_cast<long long>(range.min), static_cast<long long>(range.max), fallback);
}

// A list of distinct whole numbers within `range` (Limits.h); `fallback` when absent. A
// range that starts at 1 may be widened to 0 (etp_candidates: 0 = the stage's tp).
std::vector<int> intList(const Json &j, const char *key, const std::string &path, const Range &range,
                         std::vector<int> fallback, bool zeroAllowed = false)
{
    const long long minValue = zeroAllowed ? 0 : static_cast<long long>(range.min);
    const long long maxValue = static_cast<long long>(range.max);
    if (!has(j, key))
        return fallback;
    const std::string p = childPath(path, key);
    const Json &list = j.at(key);
    requireArray(list, p);
    if (list.empty())
        throw JsonError(p, "needs at least one value");
    std::vector<int> out;
    out.reserve(list.size());
    // Duplicates found in one pass (a set of the values seen): the search for each value in
    // the list so far took 80 s on a list of 10^6 entries (issue 25).
    std::unordered_set<int> seen;
    seen.reserve(list.size());
    for (size_t i = 0; i < list.size(); ++i) {
        const int v = static_cast<int>(asInt(list[i], childPath(p, i), minValue, maxValue));
        if (!seen.insert(v).second)
            throw JsonError(childPath(p, i), "duplicate value " + std::to_string(v));
        out.push_back(v);
    }
    return out;
}

} // namespace

const std::vector<std::string> &searchTargetNames()
{
    static const std::vector<std::string> names{"megatron", "nemo", "deepspeed", "torchtitan"};
    return names;
}

namespace {

// The precisions searched and the FP8 recipe.
void readPrecisions(const Json &j, const std::string &path, SearchSettings &s)
{
    if (has(j, "precisions")) {
        const std::string p = childPath(path, "precisions");
        const Json &list = j.at("precisions");
        requireArray(list, p);
        if (list.empty())
            throw JsonError(p, "needs at least one precision (leave the key out for every supported one)");
        for (size_t i = 0; i < list.size(); ++i) {
            NumberFormat f;
            if (!list[i].is_string() || !numberFormatFromString(list[i].get<std::string>(), f))
                throw JsonError(childPath(p, i), "expected one of " + numberFormatNames());
            if (std::find(s.precisions.begin(), s.precisions.end(), f) != s.precisions.end())
                throw JsonError(childPath(p, i), std::string("duplicate precision \"") + toString(f) + "\"");
            s.precisions.push_back(f);
        }
    }
    if (has(j, "fp8_recipe")) {
        const std::string name = getString(j, "fp8_recipe", path);
        Fp8Recipe r;
        if (!fp8RecipeFromString(name, r))
            throw JsonError(childPath(path, "fp8_recipe"),
                            "unknown FP8 recipe \"" + name + "\" (use " + fp8RecipeNames() + ")");
        s.fp8Recipe = r;
    }
}

// The planner and the framework target.
void readPlanner(const Json &j, const std::string &path, SearchSettings &s)
{
    s.planner = getString(j, "planner", path, s.planner);
    s.target = getString(j, "target", path, "");
    if (!s.target.empty() &&
        std::find(searchTargetNames().begin(), searchTargetNames().end(), s.target) == searchTargetNames().end())
        throw JsonError(childPath(path, "target"),
                        "expected one of \"megatron\", \"nemo\", \"deepspeed\", \"torchtitan\", found \"" + s.target + "\"");
    if (!makePlanner(s.planner))
        throw JsonError(childPath(path, "planner"), "expected one of " + plannerNameList() + ", found \"" + s.planner + "\"");
}

// Micro-batch sizes, schedules and interleaving depths.
void readSchedules(const Json &j, const std::string &path, SearchSettings &s)
{
    s.microBatches = intList(j, "micro_batches", path, limits::microBatch, s.microBatches);
    if (has(j, "schedules")) {
        const std::string p = childPath(path, "schedules");
        const Json &list = j.at("schedules");
        requireArray(list, p);
        if (list.empty())
            throw JsonError(p, "needs at least one schedule");
        s.schedules.clear();
        for (size_t i = 0; i < list.size(); ++i) {
            Schedule sc;
            if (!list[i].is_string() || !scheduleFromString(list[i].get<std::string>(), sc))
                throw JsonError(childPath(p, i), "expected one of \"1f1b\", \"gpipe\", \"interleaved\"");
            s.schedules.push_back(sc);
        }
    }
    if (has(j, "virtual_stages") && j.at("virtual_stages").is_array()) {
        const std::vector<int> depths = intList(j, "virtual_stages", path, limits::interleavingDepth, {});
        s.virtualStages.assign(depths.begin(), depths.end());
    } else if (has(j, "virtual_stages")) {
        s.virtualStages = static_cast<int>(intIn(j, "virtual_stages", path, limits::interleavingDepth, 2));  // an old file
    }
}

// The search's limits: stages, the MCMC budget and seed, the best K, the units of the split, the memory headroom.
void readLimits(const Json &j, const std::string &path, SearchSettings &s)
{
    s.maxStages = static_cast<int>(intIn(j, "max_stages", path, limits::maxStages, 0));
    // 0 = the planner's default budget, below the range of a budget given.
    s.mcmcBudget = static_cast<int>(getInt(j, "mcmc_budget", path, 0, static_cast<long long>(limits::evaluationBudget.max), 0));
    s.seed = intIn(j, "seed", path, limits::searchSeed, 1);
    s.topK = static_cast<int>(intIn(j, "top_k", path, limits::topPlans, 1));
    const std::string units = getString(j, "pipeline_units", path, "layers");
    if (!pipelineUnitsFromString(units, s.pipelineUnits))
        throw JsonError(childPath(path, "pipeline_units"),
                        "expected one of \"layers\", \"layers+embedding\", \"layers+embedding+loss\", found \"" +
                            units + "\"");
    s.memoryHeadroom = getNonNegative(j, "memory_headroom", path, 0.0);
    if (s.memoryHeadroom >= 1)
        throw JsonError(childPath(path, "memory_headroom"), "must be a fraction below 1");
    requireInRange(s.memoryHeadroom, limits::memoryHeadroom, childPath(path, "memory_headroom"));
}

// The framework profile and the stack its kernels run on.
void readCostModel(const Json &j, const std::string &path, SearchSettings &s)
{
    if (has(j, "framework")) {
        const std::string name = getString(j, "framework", path);
        const auto f = frameworkFromString(name);
        if (!f)
            throw JsonError(childPath(path, "framework"),
                            "unknown framework '" + name + "' (known: " + frameworkNameList() + ")");
        s.framework = *f;
    }
    if (has(j, "stack")) {
        const std::string name = getString(j, "stack", path);
        const auto st = stackFromString(name);
        if (!st)
            throw JsonError(childPath(path, "stack"), "unknown stack '" + name + "' (known: defaults, tuned)");
        s.stack = *st;
    }
    s.fp8Attention = getBool(j, "fp8_attention", path, false);
    // MoE pricing.
    s.moeImbalance = getNumber(j, "moe_imbalance", path, s.moeImbalance);
    requireInRange(s.moeImbalance, limits::moeImbalance, childPath(path, "moe_imbalance"));
    s.capacityFactor = getNumber(j, "capacity_factor", path, 0.0);
    requireInRange(s.capacityFactor, limits::capacityFactor, childPath(path, "capacity_factor"));
    if (has(j, "moe_dispatcher")) {
        const std::string name = getString(j, "moe_dispatcher", path);
        const std::optional<bool> hierarchical = moeDispatcherIsHierarchical(name);
        if (!hierarchical)
            throw JsonError(childPath(path, "moe_dispatcher"),
                            "unknown dispatcher '" + name + "' (known: alltoall, deepep)");
        s.moeHierarchicalDispatch = *hierarchical;
    }
    s.moeA2aOverlap = getBool(j, "moe_a2a_overlap", path, false);
    if (has(j, "recompute_modules")) {
        const std::string p = childPath(path, "recompute_modules");
        const Json &list = j.at("recompute_modules");
        requireArray(list, p);
        std::vector<std::string> names;
        for (size_t i = 0; i < list.size(); ++i) {
            if (!list[i].is_string())
                throw JsonError(childPath(p, i), "expected a module name (core_attn, layernorm, moe_act, mla_up_proj)");
            names.push_back(list[i].get<std::string>());
        }
        std::string why;
        const auto modules = parseRecomputeModules(names, &why);
        if (!modules)
            throw JsonError(p, why);
        s.recomputeModules = *modules;
    }
}

// Which dimensions and memory savers the search may use.
void readAllowed(const Json &j, const std::string &path, SearchSettings &s)
{
    s.allowTp = getBool(j, "allow_tp", path, true);
    s.allowPp = getBool(j, "allow_pp", path, true);
    s.allowDp = getBool(j, "allow_dp", path, true);
    s.allowEp = getBool(j, "allow_ep", path, true);
    s.allowCp = getBool(j, "allow_cp", path, true);
    s.allowSequenceParallel = getBool(j, "allow_sp", path, true);
    s.allowZero = getBool(j, "allow_zero", path, true);
    s.allowRecompute = getBool(j, "allow_recompute", path, true);
    if (has(j, "recompute_modes")) {
        const std::string p = childPath(path, "recompute_modes");
        const Json &list = j.at("recompute_modes");
        requireArray(list, p);
        if (list.empty())
            throw JsonError(p, "needs at least one mode (allow_recompute false switches recomputation off)");
        s.recomputeModes.clear();
        for (size_t i = 0; i < list.size(); ++i) {
            Recompute r;
            if (!list[i].is_string() || !recomputeFromString(list[i].get<std::string>(), r))
                throw JsonError(childPath(p, i), "expected one of \"none\", \"selective\", \"full\"");
            if (std::find(s.recomputeModes.begin(), s.recomputeModes.end(), r) != s.recomputeModes.end())
                throw JsonError(childPath(p, i), std::string("duplicate mode \"") + toString(r) + "\"");
            s.recomputeModes.push_back(r);
        }
    }
}

// The candidate widths and layouts.
void readCandidates(const Json &j, const std::string &path, SearchSettings &s)
{
    s.tpCandidates = intList(j, "tp_candidates", path, limits::candidateWidth, s.tpCandidates);
    s.epCandidates = intList(j, "ep_candidates", path, limits::candidateWidth, s.epCandidates);
    s.etpCandidates = intList(j, "etp_candidates", path, limits::candidateWidth, s.etpCandidates, true);
    s.cpCandidates = intList(j, "cp_candidates", path, limits::candidateWidth, s.cpCandidates);
    s.cpMinTokensPerRank =
        static_cast<int>(intIn(j, "cp_min_tokens_per_rank", path, limits::cpMinTokensPerRank, s.cpMinTokensPerRank));
    if (has(j, "layouts")) {
        const std::string p = childPath(path, "layouts");
        const Json &list = j.at("layouts");
        requireArray(list, p);
        if (list.empty())
            throw JsonError(p, "needs at least one layout");
        s.layouts.clear();
        for (size_t i = 0; i < list.size(); ++i) {
            Layout l;
            if (!list[i].is_string() || !layoutFromString(list[i].get<std::string>(), l))
                throw JsonError(childPath(p, i), "expected \"outside\" or \"inside\"");
            s.layouts.push_back(l);
        }
    }
}

} // namespace

SearchSettings searchSettingsFromJson(const Json &j, const std::string &path)
{
    requireKnownKeys(j, path,
                     {"planner", "micro_batches", "schedules", "virtual_stages", "max_stages", "memory_headroom",
                      "framework", "stack", "allow_tp", "allow_pp", "allow_dp", "allow_ep", "allow_cp", "allow_sp", "allow_zero",
                      "allow_recompute", "recompute_modes", "tp_candidates", "ep_candidates", "etp_candidates", "cp_candidates",
                      "cp_min_tokens_per_rank", "layouts", "pipeline_units", "mcmc_budget", "seed", "top_k",
                      "precisions", "fp8_recipe", "fp8_attention", "recompute_modules", "moe_imbalance",
                      "capacity_factor", "moe_dispatcher", "moe_a2a_overlap", "target"});
    SearchSettings s;
    readPrecisions(j, path, s);
    readPlanner(j, path, s);
    readSchedules(j, path, s);
    readLimits(j, path, s);
    readCostModel(j, path, s);
    readAllowed(j, path, s);
    readCandidates(j, path, s);
    return s;
}

} // namespace nest
