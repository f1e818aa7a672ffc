// SearchSettings (core/SearchSettings.h): the one conversion to SearchOptions, the JSON round
// trip (with guards that fail when a field is added to the struct but not to the JSON), the
// planner factory, the errors of bad JSON (each names its path), and the settings' effect on
// the plans the real planners return.
#include "ClusterIO.h"
#include "ClusterTemplates.h"
#include "ModelBuilder.h"
#include "ModelIO.h"
#include "SearchSettings.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstddef>

using namespace nest;

Q_DECLARE_METATYPE(nest::SearchSettings)

namespace {

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
    s.cpCandidates = {1, 2};
    s.cpMinTokensPerRank = 0;
    s.layouts = {Layout::ReplicasInside};
    s.memoryHeadroom = 0.125;
    s.framework = Framework::Fsdp;
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
    static const ModelProfile m = [] {
        ModelOptions o;
        o.globalBatch = 16;
        o.seqLength = 1024;
        return resolveModel("llama2-7b", o).value();
    }();
    return m;
}

PlanResult planWith(const SearchSettings &s, const Topology &topo = smallCluster(),
                    const ModelProfile &model = smallModel())
{
    const std::unique_ptr<Planner> planner = makePlanner(s.planner);
    if (!planner)
        return {};
    return planner->plan(topo, model, searchOptionsFrom(s, model));
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

ModelProfile tinyModel(int blocks = 2)
{
    ModelConfig c = familyDefaults("gpt");
    c.name = "tiny-gpt";
    c.layers = blocks;
    c.hidden = 512;
    c.heads = 8;
    c.kvHeads = 8;
    c.ffnHidden = 2048;
    c.vocab = 4000;
    c.seqLength = 256;
    c.maxPositions = 256;
    c.globalBatch = 16;
    return buildProfile(c);
}

} // namespace

class TestSearchSettings : public QObject {
    Q_OBJECT
private slots:
    void optionsMapEveryField();
    void strategySwitches();
    void jsonRoundTrip();
    void oldSingleDepthStillReads();
    void everyJsonKeyIsAField();
    void jsonErrorsNameThePath_data();
    void jsonErrorsNameThePath();
    void plannerFactory();
    void behaviourBaseline();
    void behaviourRestrictions();
    void memoryHeadroomHolds();
    void exhaustiveAgreesWithNest_data();
    void exhaustiveAgreesWithNest();
    void insideLayoutAloneAtDpOne();
};

void TestSearchSettings::optionsMapEveryField()
{
    ModelProfile model = smallModel();
    model.globalBatch = 48;
    model.seqLength = 768;
    SearchSettings s = everyFieldChanged();
    // Strategies on, so that the candidate lists pass through unchanged.
    s.allowTp = s.allowPp = s.allowDp = s.allowEp = s.allowCp = true;
    const SearchOptions o = searchOptionsFrom(s, model);
    QCOMPARE(o.globalBatch, 48);
    QCOMPARE(o.seqLength, 768);
    QCOMPARE(o.microBatches, (std::vector<int>{3, 1}));
    QCOMPARE(o.schedules, (std::vector<Schedule>{Schedule::Interleaved, Schedule::OneFOneB}));
    QCOMPARE(o.virtualStages, (std::vector<int>{4, 6}));
    QCOMPARE(o.recomputeModes, (std::vector<Recompute>{Recompute::Full, Recompute::None}));
    QCOMPARE(o.cpMinTokensPerRank, 0);
    QCOMPARE(o.maxStages, 6);
    QCOMPARE(o.allowZero, false);
    QCOMPARE(o.allowRecompute, false);
    QCOMPARE(o.allowSp, false);
    QCOMPARE(o.tpCandidates, (std::vector<int>{4, 2}));
    QCOMPARE(o.epCandidates, (std::vector<int>{2}));
    QCOMPARE(o.cpCandidates, (std::vector<int>{1, 2}));
    QVERIFY(o.dpCandidates.empty());  // every dp that divides the batch
    QCOMPARE(o.layouts, (std::vector<Layout>{Layout::ReplicasInside}));
    QCOMPARE(o.memoryHeadroom, 0.125);
    // The headroom and the framework reach the evaluator; every other cost option keeps its
    // default.
    CostOptions expectedCost;
    expectedCost.memoryHeadroom = 0.125;
    expectedCost.framework = Framework::Fsdp;
    QVERIFY(o.cost == expectedCost);

    // The opposite booleans map as well.
    SearchSettings t;
    t.allowZero = t.allowRecompute = t.allowSequenceParallel = true;
    const SearchOptions p = searchOptionsFrom(t, model);
    QVERIFY(p.allowZero && p.allowRecompute && p.allowSp);
    QCOMPARE(p.maxStages, 0);
    // The defaults of the settings are the planner's defaults.
    const SearchOptions plannerDefaults;
    QCOMPARE(p.virtualStages, plannerDefaults.virtualStages);
    QCOMPARE(p.recomputeModes, plannerDefaults.recomputeModes);
    QCOMPARE(p.cpCandidates, plannerDefaults.cpCandidates);
    QCOMPARE(p.cpMinTokensPerRank, plannerDefaults.cpMinTokensPerRank);
    QCOMPARE(p.virtualStages, (std::vector<int>{2, 3, 4}));
    QCOMPARE(p.cpCandidates, (std::vector<int>{1, 2, 4, 8, 16}));
    QCOMPARE(p.cpMinTokensPerRank, 4096);
    QCOMPARE(p.recomputeModes,
             (std::vector<Recompute>{Recompute::None, Recompute::Selective, Recompute::Full}));
    QCOMPARE(p.memoryHeadroom, 0.0);
}

void TestSearchSettings::strategySwitches()
{
    const ModelProfile &model = smallModel();
    SearchSettings s;
    s.tpCandidates = {2, 4};
    s.epCandidates = {4};
    s.cpCandidates = {1, 2};
    s.maxStages = 5;

    s.allowTp = false;
    QCOMPARE(searchOptionsFrom(s, model).tpCandidates, (std::vector<int>{1}));
    s.allowEp = false;
    QCOMPARE(searchOptionsFrom(s, model).epCandidates, (std::vector<int>{1}));
    s.allowCp = false;
    QCOMPARE(searchOptionsFrom(s, model).cpCandidates, (std::vector<int>{1}));
    s.allowPp = false;
    QCOMPARE(searchOptionsFrom(s, model).maxStages, 1);
    s.allowDp = false;
    QCOMPARE(searchOptionsFrom(s, model).dpCandidates, (std::vector<int>{1}));
    // Switching off keeps the lists in the settings (and in their JSON) ...
    QCOMPARE(s.tpCandidates, (std::vector<int>{2, 4}));
    QCOMPARE(searchSettingsFromJson(searchSettingsToJson(s), "search"), s);

    // ... so switching back on restores them.
    s.allowTp = s.allowEp = s.allowCp = s.allowPp = s.allowDp = true;
    const SearchOptions o = searchOptionsFrom(s, model);
    QCOMPARE(o.tpCandidates, (std::vector<int>{2, 4}));
    QCOMPARE(o.epCandidates, (std::vector<int>{4}));
    QCOMPARE(o.cpCandidates, (std::vector<int>{1, 2}));
    QCOMPARE(o.maxStages, 5);
    QVERIFY(o.dpCandidates.empty());
}

void TestSearchSettings::jsonRoundTrip()
{
    const SearchSettings defaults;
    QCOMPARE(searchSettingsFromJson(searchSettingsToJson(defaults), "search"), defaults);
    QCOMPARE(searchSettingsFromJson(Json::object(), "search"), defaults);  // every key optional

    const SearchSettings changed = everyFieldChanged();
    const Json j = searchSettingsToJson(changed);
    QCOMPARE(searchSettingsFromJson(j, "search"), changed);
    // Text round trip too (what a workspace file holds).
    QCOMPARE(searchSettingsFromJson(Json::parse(j.dump(2)), "search"), changed);

    // everyFieldChanged() really changes every key, so the round trip above covers each one.
    const Json d = searchSettingsToJson(defaults);
    QCOMPARE(j.size(), d.size());
    for (const auto &item : d.items())
        QVERIFY2(j.at(item.key()) != item.value(), item.key().c_str());

    // One JSON key per field: adding a field to SearchSettings without a key (or a key
    // without a field) fails here.
    constexpr std::size_t fields = aggregateFieldCount<SearchSettings>();
    QCOMPARE(fields, std::size_t(21));
    QCOMPARE(d.size(), fields);
}

void TestSearchSettings::oldSingleDepthStillReads()
{
    // Workspaces written when the interleaving depth was one number.
    const SearchSettings s = searchSettingsFromJson(Json{{"virtual_stages", 3}}, "search");
    QCOMPARE(static_cast<const std::vector<int> &>(s.virtualStages), (std::vector<int>{3}));
    QCOMPARE(searchSettingsToJson(s).at("virtual_stages"), Json::array({3}));
    QCOMPARE(searchOptionsFrom(s, smallModel()).virtualStages, (std::vector<int>{3}));
    // An int assigned in code means the same single depth.
    SearchSettings t;
    t.virtualStages = 3;
    QCOMPARE(t, s);
}

void TestSearchSettings::everyJsonKeyIsAField()
{
    // Each key of the default JSON is accepted, and changing it alone changes the parsed
    // settings in exactly that key (so no two keys share a field and none is ignored).
    const SearchSettings defaults;
    const Json d = searchSettingsToJson(defaults);
    QVERIFY(d.size() >= 20);
    for (const auto &item : d.items()) {
        const std::string &key = item.key();
        const Json value = altered(item.value());
        QVERIFY2(!value.is_null(), ("no other value for " + key).c_str());
        QVERIFY2(value != item.value(), key.c_str());
        const Json one{{key, value}};
        SearchSettings parsed;
        try {
            parsed = searchSettingsFromJson(one, "search");
        } catch (const JsonError &e) {
            QFAIL(qPrintable(QString::fromStdString(key + " " + value.dump() + ": " + e.what())));
        }
        QVERIFY2(!(parsed == defaults), key.c_str());
        Json expected = d;
        expected[key] = value;
        QVERIFY2(searchSettingsToJson(parsed) == expected,
                 (key + ": " + searchSettingsToJson(parsed).dump()).c_str());
        // The key alone, at its default value, is accepted and changes nothing.
        QCOMPARE(searchSettingsFromJson(Json{{key, item.value()}}, "search"), defaults);
    }
}

void TestSearchSettings::jsonErrorsNameThePath_data()
{
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("reason");  // a fragment of the reason

    QTest::newRow("not an object") << "[1]" << "search" << "expected an object";
    QTest::newRow("unknown key") << R"({"alow_tp": true})" << "search.alow_tp" << "unknown key";
    QTest::newRow("unknown planner") << R"({"planner": "greedy"})" << "search.planner" << "greedy";
    QTest::newRow("planner not a string") << R"({"planner": 1})" << "search.planner" << "expected a string";
    QTest::newRow("virtual_stages 0") << R"({"virtual_stages": 0})" << "search.virtual_stages" << "between 2 and 64";
    QTest::newRow("virtual_stages 1") << R"({"virtual_stages": 1})" << "search.virtual_stages" << "between 2 and 64";
    QTest::newRow("virtual_stages 65") << R"({"virtual_stages": 65})" << "search.virtual_stages" << "between 2 and 64";
    QTest::newRow("virtual_stages 2.5") << R"({"virtual_stages": 2.5})" << "search.virtual_stages" << "whole number";
    QTest::newRow("virtual_stages entry 1") << R"({"virtual_stages": [2, 1]})" << "search.virtual_stages[1]"
                                            << "between 2 and 64";
    QTest::newRow("virtual_stages entry 65") << R"({"virtual_stages": [65]})" << "search.virtual_stages[0]"
                                             << "between 2 and 64";
    QTest::newRow("virtual_stages duplicate") << R"({"virtual_stages": [3, 3]})" << "search.virtual_stages[1]"
                                              << "duplicate value 3";
    QTest::newRow("virtual_stages empty") << R"({"virtual_stages": []})" << "search.virtual_stages" << "at least one";
    QTest::newRow("recompute_modes entry") << R"({"recompute_modes": ["none", "partial"]})"
                                           << "search.recompute_modes[1]" << "\"selective\"";
    QTest::newRow("recompute_modes not a string") << R"({"recompute_modes": [true]})" << "search.recompute_modes[0]"
                                                  << "\"full\"";
    QTest::newRow("recompute_modes duplicate") << R"({"recompute_modes": ["full", "FULL"]})"
                                               << "search.recompute_modes[1]" << "duplicate mode \"full\"";
    QTest::newRow("recompute_modes empty") << R"({"recompute_modes": []})" << "search.recompute_modes"
                                           << "at least one";
    QTest::newRow("recompute_modes not a list") << R"({"recompute_modes": "full"})" << "search.recompute_modes"
                                                << "expected an array";
    QTest::newRow("cp_min_tokens_per_rank -1") << R"({"cp_min_tokens_per_rank": -1})"
                                               << "search.cp_min_tokens_per_rank" << "between 0";
    QTest::newRow("max_stages -1") << R"({"max_stages": -1})" << "search.max_stages" << "between 0";
    QTest::newRow("layouts entry") << R"({"layouts": ["outside", "sideways"]})" << "search.layouts[1]"
                                   << "\"outside\" or \"inside\"";
    QTest::newRow("layouts entry not a string") << R"({"layouts": [1]})" << "search.layouts[0]" << "\"inside\"";
    QTest::newRow("layouts empty") << R"({"layouts": []})" << "search.layouts" << "at least one";
    QTest::newRow("layouts not a list") << R"({"layouts": "inside"})" << "search.layouts" << "expected an array";
    QTest::newRow("schedules entry") << R"({"schedules": ["1f1b", "zb"]})" << "search.schedules[1]" << "gpipe";
    QTest::newRow("schedules empty") << R"({"schedules": []})" << "search.schedules" << "at least one";
    QTest::newRow("duplicate tp") << R"({"tp_candidates": [1, 2, 2]})" << "search.tp_candidates[2]"
                                  << "duplicate value 2";
    QTest::newRow("duplicate micro-batch") << R"({"micro_batches": [4, 4]})" << "search.micro_batches[1]"
                                           << "duplicate";
    QTest::newRow("tp 0") << R"({"tp_candidates": [0]})" << "search.tp_candidates[0]" << "between 1";
    QTest::newRow("micro-batch 0") << R"({"micro_batches": [1, 0]})" << "search.micro_batches[1]" << "between 1";
    QTest::newRow("micro_batches empty") << R"({"micro_batches": []})" << "search.micro_batches" << "at least one";
    QTest::newRow("tp_candidates empty") << R"({"tp_candidates": []})" << "search.tp_candidates" << "at least one";
    QTest::newRow("ep_candidates empty") << R"({"ep_candidates": []})" << "search.ep_candidates" << "at least one";
    QTest::newRow("cp_candidates empty") << R"({"cp_candidates": []})" << "search.cp_candidates" << "at least one";
    QTest::newRow("negative headroom") << R"({"memory_headroom": -0.1})" << "search.memory_headroom"
                                       << "must not be negative";
    QTest::newRow("headroom 1") << R"({"memory_headroom": 1})" << "search.memory_headroom" << "below 1";
    QTest::newRow("headroom a string") << R"({"memory_headroom": "10%"})" << "search.memory_headroom"
                                       << "expected a number";
    QTest::newRow("allow_tp not a bool") << R"({"allow_tp": "yes"})" << "search.allow_tp" << "true or false";
    QTest::newRow("allow_recompute 1") << R"({"allow_recompute": 1})" << "search.allow_recompute"
                                       << "true or false";
    QTest::newRow("unknown framework") << R"({"framework": "jax"})" << "search.framework"
                                       << "unknown framework 'jax' (known: megatron-core, megatron-lm";
}

void TestSearchSettings::jsonErrorsNameThePath()
{
    QFETCH(QString, json);
    QFETCH(QString, path);
    QFETCH(QString, reason);
    const Json j = Json::parse(json.toStdString());
    try {
        const SearchSettings s = searchSettingsFromJson(j, "search");
        QFAIL(qPrintable("accepted " + json + " as " +
                         QString::fromStdString(searchSettingsToJson(s).dump())));
    } catch (const JsonError &e) {
        QCOMPARE(QString::fromStdString(e.path()), path);
        QVERIFY2(QString::fromStdString(e.reason()).contains(reason), e.what());
        // The message a user sees starts with the path.
        QVERIFY2(QString::fromUtf8(e.what()).startsWith(path + ": "), e.what());
    }
}

void TestSearchSettings::plannerFactory()
{
    QVERIFY(!plannerNames().empty());
    QVERIFY(std::find(plannerNames().begin(), plannerNames().end(), SearchSettings{}.planner) !=
            plannerNames().end());
    for (const std::string &name : plannerNames()) {
        const std::unique_ptr<Planner> p = makePlanner(name);
        QVERIFY2(p != nullptr, name.c_str());
        QCOMPARE(p->name(), name);
        // Every listed name is accepted by the JSON reader too.
        QCOMPARE(searchSettingsFromJson(Json{{"planner", name}}, "search").planner, name);
    }
    QVERIFY(makePlanner("") == nullptr);
    QVERIFY(makePlanner("NEST") == nullptr);
    QVERIFY(makePlanner("greedy") == nullptr);
}

void TestSearchSettings::behaviourBaseline()
{
    // The unrestricted optimum on the small instance, so that each restriction tested below
    // really changes the plan (a failure here means the instance must be re-chosen).
    const PlanResult r = planWith(SearchSettings{});
    QVERIFY2(r.found && r.verified, r.message.c_str());
    QVERIFY(maxTp(r.plan) > 1);
    QVERIFY(r.plan.dp > 1);
    QVERIFY(r.plan.microBatch != 2);
    QVERIFY(r.plan.schedule != Schedule::GPipe);
    QVERIFY2(peakFraction(r.report, smallCluster()) > 0.5,
             qPrintable(QString::number(peakFraction(r.report, smallCluster()))));
    // Without data parallelism the optimum is a pipeline (the allowPp check needs one).
    SearchSettings noDp;
    noDp.allowDp = false;
    const PlanResult p = planWith(noDp);
    QVERIFY2(p.found && p.verified, p.message.c_str());
    QVERIFY(p.plan.pipelineDepth() >= 2);
}

void TestSearchSettings::behaviourRestrictions()
{
    const PlanResult best = planWith(SearchSettings{});
    QVERIFY(best.found);
    const auto check = [&](const SearchSettings &s, const char *what) -> PlanResult {
        const PlanResult r = planWith(s);
        if (!r.found || !r.verified)
            qWarning("%s: %s", what, r.message.c_str());
        return r;  // callers check found, verified, and that it is no faster than `best`
    };
    {
        SearchSettings s;
        s.allowTp = false;
        const PlanResult r = check(s, "allowTp=false");
        QVERIFY(r.found && r.verified && r.objective >= best.objective);
        for (const StagePlan &st : r.plan.stages)
            QCOMPARE(st.tp, 1);
    }
    {
        SearchSettings s;
        s.allowDp = false;
        const PlanResult r = check(s, "allowDp=false");
        QVERIFY(r.found && r.verified && r.objective >= best.objective);
        QCOMPARE(r.plan.dp, 1);
        for (const StagePlan &st : r.plan.stages)
            QCOMPARE(int(st.devices.size()), 1);

        s.allowPp = false;  // no dp and no pp: one stage on one replica
        const PlanResult one = check(s, "allowDp=allowPp=false");
        QVERIFY(one.found && one.verified && one.objective >= r.objective);
        QCOMPARE(one.plan.dp, 1);
        QCOMPARE(int(one.plan.stages.size()), 1);
        QCOMPARE(one.plan.pipelineDepth(), 1);

        s.allowPp = true;  // a stage limit applies when pp is on: one below the optimum's depth
        s.maxStages = r.plan.pipelineDepth() - 1;
        QVERIFY(s.maxStages >= 1);  // behaviourBaseline: the optimum without dp is a pipeline
        const PlanResult capped = check(s, "allowDp=false maxStages=depth-1");
        QVERIFY(capped.found && capped.verified);
        QVERIFY(capped.plan.pipelineDepth() <= s.maxStages);
        QVERIFY(capped.objective >= r.objective);
    }
    {
        SearchSettings s;
        s.allowPp = false;
        const PlanResult r = check(s, "allowPp=false");
        QVERIFY(r.found && r.verified && r.objective >= best.objective);
        QCOMPARE(int(r.plan.stages.size()), 1);
    }
    {
        SearchSettings s;
        s.schedules = {Schedule::GPipe};
        const PlanResult r = check(s, "schedules={GPipe}");
        QVERIFY(r.found && r.verified && r.objective >= best.objective);
        QCOMPARE(r.plan.schedule, Schedule::GPipe);
    }
    {
        SearchSettings s;
        s.microBatches = {2};
        const PlanResult r = check(s, "microBatches={2}");
        QVERIFY(r.found && r.verified && r.objective >= best.objective);
        QCOMPARE(r.plan.microBatch, 2);
        QCOMPARE(r.plan.numMicroBatches() * 2 * r.plan.dp, 16);
    }
    {
        SearchSettings s;
        s.allowZero = false;
        s.allowRecompute = false;
        const PlanResult r = check(s, "allowZero=allowRecompute=false");
        QVERIFY(r.found && r.verified && r.objective >= best.objective);
        for (const StagePlan &st : r.plan.stages) {
            QCOMPARE(st.zero, 0);
            QVERIFY(st.recompute == Recompute::None);
        }
    }
}

void TestSearchSettings::memoryHeadroomHolds()
{
    const Topology &topo = smallCluster();
    SearchSettings s;
    s.memoryHeadroom = 0.5;
    const PlanResult r = planWith(s);
    QVERIFY2(r.found && r.verified, r.message.c_str());
    QVERIFY(r.report.feasible);
    int used = 0;
    for (const DeviceReport &d : r.report.devices) {
        const double full = topo.spec(d.device).memoryBytes;
        // The report's capacity is what the headroom leaves ...
        QCOMPARE(d.capacity, full * 0.5);
        if (d.stage < 0)
            continue;
        ++used;
        // ... and no device of the plan needs more than that.
        QVERIFY2(d.total <= 0.5 * full,
                 qPrintable(QString("device %1: %2 of %3 bytes").arg(d.device).arg(d.total).arg(full)));
    }
    QCOMPARE(used, r.report.devicesUsed);
    QVERIFY(r.report.peakMemoryBytes <= 0.5 * topo.spec(0).memoryBytes);
    // The unrestricted optimum needs more than half (behaviourBaseline), so this is a
    // different, slower plan.
    const PlanResult best = planWith(SearchSettings{});
    QVERIFY(peakFraction(best.report, topo) > 0.5);
    QVERIFY(r.objective > best.objective);
}

void TestSearchSettings::exhaustiveAgreesWithNest_data()
{
    QTest::addColumn<SearchSettings>("settings");
    QTest::addColumn<double>("memoryBytes");  // per device; 0 = the template's H100
    QTest::addColumn<int>("blocks");          // transformer blocks of the tiny GPT
    QTest::newRow("defaults") << SearchSettings{} << 0.0 << 2;
    SearchSettings narrow;
    narrow.allowTp = false;
    narrow.microBatches = {1, 2};
    narrow.schedules = {Schedule::OneFOneB, Schedule::GPipe};
    QTest::newRow("no tp, mb 1-2, 1f1b+gpipe") << narrow << 0.0 << 2;
    SearchSettings tight;
    tight.allowDp = false;
    tight.maxStages = 2;
    tight.memoryHeadroom = 0.3;
    tight.allowZero = false;
    // 1.5 GB devices: 30 % headroom leaves 1.05 GB, less than the unrestricted optimum
    // needs (checked below), so the headroom decides the plan.
    QTest::newRow("no dp, <= 2 stages, headroom 0.3, no zero") << tight << 1.5e9 << 2;
    SearchSettings interleaved;
    interleaved.schedules = {Schedule::Interleaved};
    interleaved.virtualStages = 2;
    interleaved.allowRecompute = false;
    // 4 blocks: the interleaved chunks cut the blocks (pp 2 x depth 2).
    QTest::newRow("interleaved alone") << interleaved << 0.0 << 4;
    SearchSettings modes;
    modes.recomputeModes = {Recompute::Selective, Recompute::Full};
    modes.allowDp = false;
    QTest::newRow("recompute selective or full, no dp") << modes << 0.0 << 2;
}

void TestSearchSettings::exhaustiveAgreesWithNest()
{
    QFETCH(SearchSettings, settings);
    QFETCH(double, memoryBytes);
    QFETCH(int, blocks);
    Topology topo = tinyCluster();
    if (memoryBytes > 0)
        topo.deviceTypes[0].memoryBytes = memoryBytes;
    QCOMPARE(topo.deviceCount(), 4);
    const ModelProfile model = tinyModel(blocks);
    QCOMPARE(model.layerCount(), blocks + 2);  // embedding, blocks, head

    SearchSettings nest = settings;
    nest.planner = "nest";
    SearchSettings exhaustive = settings;
    exhaustive.planner = "exhaustive";
    const PlanResult n = planWith(nest, topo, model);
    const PlanResult e = planWith(exhaustive, topo, model);
    QVERIFY2(n.found && n.verified, n.message.c_str());
    QVERIFY2(e.found && e.verified, e.message.c_str());
    QVERIFY2(std::abs(n.objective - e.objective) <= 1e-9 * e.objective,
             qPrintable(QString("nest %1 s, exhaustive %2 s").arg(n.objective, 0, 'g', 17)
                            .arg(e.objective, 0, 'g', 17)));
    // Both honour the settings.
    for (const PlanResult *r : {&n, &e}) {
        QVERIFY(std::find(settings.microBatches.begin(), settings.microBatches.end(), r->plan.microBatch) !=
                settings.microBatches.end());
        QVERIFY(std::find(settings.schedules.begin(), settings.schedules.end(), r->plan.schedule) !=
                settings.schedules.end());
        if (!settings.allowTp)
            QCOMPARE(maxTp(r->plan), 1);
        if (!settings.allowDp)
            QCOMPARE(r->plan.dp, 1);
        if (settings.maxStages > 0)
            QVERIFY(r->plan.pipelineDepth() <= settings.maxStages);
        for (const StagePlan &st : r->plan.stages) {
            const auto &modes = settings.recomputeModes;
            if (settings.allowRecompute)
                QVERIFY(std::find(modes.begin(), modes.end(), st.recompute) != modes.end());
            else
                QVERIFY(st.recompute == Recompute::None);
        }
        for (const DeviceReport &d : r->report.devices) {
            QCOMPARE(d.capacity, topo.spec(d.device).memoryBytes * (1 - settings.memoryHeadroom));
            QVERIFY(d.total <= d.capacity);
        }
    }
    if (settings.memoryHeadroom > 0) {
        SearchSettings none = nest;
        none.memoryHeadroom = 0;
        const PlanResult free = planWith(none, topo, model);
        QVERIFY(free.found);
        QVERIFY2(free.objective < n.objective, "the headroom does not bind on this row");
    }
}

void TestSearchSettings::insideLayoutAloneAtDpOne()
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
    QVERIFY2(outside.found, outside.message.c_str());
    QVERIFY2(inside.found, inside.message.c_str());
    QCOMPARE(inside.objective, outside.objective);
}

QTEST_APPLESS_MAIN(TestSearchSettings)
#include "test_search_settings.moc"
