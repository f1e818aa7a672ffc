// Issue 52, point 2: a search setting has one range (core/support/Limits.h), read by the
// workspace loader, nest-cli's flags and the search panel's spin boxes. A workspace value the
// loader accepts is shown as it is and saved back unchanged, also after another field of the
// panel was edited (before, the panel capped max stages at 4,096 and the headroom at 90 % and
// wrote the clamped value back on the next edit). The flags' side: tests/core/test_cli_limits.cpp.
#include "SearchPanel.h"
#include "UiTestSupport.h"
#include "WorkspaceDocument.h"

#include "Limits.h"
#include "Workspace.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QSpinBox>
#include <QUndoStack>
#include <QtTest>

using namespace nest;
using namespace nest::ui;

namespace {

// The quickstart workspace's JSON with `search` keys replaced.
Json quickstartWith(const Json &search)
{
    Json j = workspaceToJson(loadWorkspace(uitest::kQuickstart.toStdString()).value());
    for (auto it = search.begin(); it != search.end(); ++it)
        j["search"][it.key()] = it.value();
    return j;
}

// Loads `j` as a workspace into `doc`; fails the test when the loader refuses it.
bool loadInto(WorkspaceDocument &doc, const Json &j)
{
    auto w = workspaceFromJson(j, "test.nestws.json");
    if (!w)
        qWarning("%s", w.error().c_str());
    if (!w)
        return false;
    doc.load(std::move(w).value(), QString(), WorkspaceDocument::FileKind::Workspace);
    return true;
}

} // namespace

class TestSearchLimits : public QObject {
    Q_OBJECT
private slots:
    void fileValuesBeyondTheOldPanelRangesRoundTrip()
    {
        // 100,000 stages and 95 % headroom: both accepted by the loader, both beyond what the
        // panel used to show (4,096 and 90 %).
        WorkspaceDocument doc;
        QVERIFY(loadInto(doc, quickstartWith(Json{{"max_stages", 100000}, {"memory_headroom", 0.95}})));
        SearchPanel panel(&doc);
        QCOMPARE(panel.maxStagesSpin()->value(), 100000);
        QCOMPARE(panel.headroomSpin()->value(), 95.0);

        // Another field's edit commits the whole form: the two values stay as loaded.
        panel.microBatchEdit()->setText(QStringLiteral("1, 2"));
        emit panel.microBatchEdit()->editingFinished();
        QVERIFY2(panel.problem().isEmpty(), qPrintable(panel.problem()));
        QCOMPARE(doc.search().microBatches, (std::vector<int>{1, 2}));
        QCOMPARE(doc.search().maxStages, 100000);
        QCOMPARE(doc.search().memoryHeadroom, 0.95);

        // Saved back: the same numbers in the file.
        const Json saved = workspaceToJson(doc.workspace());
        QCOMPARE(saved.at("search").at("max_stages").get<int>(), 100000);
        QCOMPARE(saved.at("search").at("memory_headroom").get<double>(), 0.95);
    }

    void fp8AttentionIsAWorkspaceSetting()
    {
        // search.fp8_attention: shown as loaded, edited by its box, saved only when set.
        WorkspaceDocument doc;
        QVERIFY(loadInto(doc, quickstartWith(Json{{"fp8_attention", true}})));
        SearchPanel panel(&doc);
        auto *box = panel.findChild<QCheckBox *>(QStringLiteral("fp8Attention"));
        QVERIFY(box);
        QVERIFY(box->isChecked());
        QVERIFY(doc.search().fp8Attention);
        box->click();  // the panel is not shown: click() as a user's click delivers it
        QVERIFY(!box->isChecked());
        QVERIFY(!doc.search().fp8Attention);
        QVERIFY(!workspaceToJson(doc.workspace()).at("search").contains("fp8_attention"));
        box->click();  // the panel is not shown: click() as a user's click delivers it
        QVERIFY(doc.search().fp8Attention);
        QCOMPARE(workspaceToJson(doc.workspace()).at("search").at("fp8_attention").get<bool>(), true);
        // What the planner prices: the cost options carry it.
        const auto profile = doc.model().profile("quickstart");
        QVERIFY(profile.ok());
        QVERIFY(searchOptionsFrom(doc.search(), *profile).cost.fp8Attention);
    }

    void recomputeModulesAreAWorkspaceSetting()
    {
        // search.recompute_modules: shown as loaded, edited by its boxes, saved only when it is
        // not core_attn alone, and what the planner prices.
        WorkspaceDocument doc;
        QVERIFY(loadInto(doc, quickstartWith(Json{{"recompute_modules", Json::array({"layernorm"})}})));
        SearchPanel panel(&doc);
        auto *core = panel.findChild<QCheckBox *>(QStringLiteral("recomputeCoreAttn"));
        auto *norms = panel.findChild<QCheckBox *>(QStringLiteral("recomputeLayerNorm"));
        QVERIFY(core && norms);
        QVERIFY(!core->isChecked());
        QVERIFY(norms->isChecked());
        core->click();  // the panel is not shown: click() as a user's click delivers it
        QVERIFY(doc.search().recomputeModules.has(RecomputeModule::CoreAttn));
        QVERIFY(doc.search().recomputeModules.has(RecomputeModule::LayerNorm));
        QCOMPARE(workspaceToJson(doc.workspace()).at("search").at("recompute_modules"),
                 Json::array({"core_attn", "layernorm"}));
        norms->click();  // back to the default: the key is left out
        QVERIFY(doc.search().recomputeModules.isDefault());
        QVERIFY(!workspaceToJson(doc.workspace()).at("search").contains("recompute_modules"));
        const auto profile = doc.model().profile("quickstart");
        QVERIFY(profile.ok());
        norms->click();
        QVERIFY(searchOptionsFrom(doc.search(), *profile).cost.recomputeModules.has(RecomputeModule::LayerNorm));
    }

    void moeOptionsAreWorkspaceSettings()
    {
        // search.moe_imbalance, capacity_factor, moe_dispatcher and moe_a2a_overlap: shown as
        // loaded, edited by their controls, saved only when set, and what the planner prices.
        // An imbalance finer than the box's two decimals survives another field's edit.
        WorkspaceDocument doc;
        QVERIFY(loadInto(doc, quickstartWith(Json{{"moe_imbalance", 1.125}, {"moe_a2a_overlap", true}})));
        SearchPanel panel(&doc);
        auto *imbalance = panel.findChild<QDoubleSpinBox *>(QStringLiteral("moeImbalance"));
        auto *capacity = panel.findChild<QDoubleSpinBox *>(QStringLiteral("capacityFactor"));
        auto *dispatcher = panel.findChild<QComboBox *>(QStringLiteral("moeDispatcher"));
        auto *overlap = panel.findChild<QCheckBox *>(QStringLiteral("moeA2aOverlap"));
        QVERIFY(imbalance && capacity && dispatcher && overlap);
        QCOMPARE(imbalance->minimum(), limits::moeImbalance.min);
        QCOMPARE(imbalance->maximum(), limits::moeImbalance.max);
        QCOMPARE(capacity->maximum(), limits::capacityFactor.max);
        QCOMPARE(capacity->text(), QStringLiteral("dropless"));  // 0: no capacity
        QVERIFY(overlap->isChecked());
        QCOMPARE(dispatcher->currentData().toString(), QStringLiteral("alltoall"));
        overlap->click();  // the panel is not shown: click() as a user's click delivers it
        QVERIFY(!doc.search().moeA2aOverlap);
        QCOMPARE(doc.search().moeImbalance, 1.125);  // not the 1.12 or 1.13 the box shows
        QVERIFY(!workspaceToJson(doc.workspace()).at("search").contains("moe_a2a_overlap"));
        dispatcher->setCurrentIndex(dispatcher->findData(QStringLiteral("deepep")));
        QVERIFY(doc.search().moeHierarchicalDispatch);
        imbalance->setValue(1.5);
        capacity->setValue(2.0);
        QCOMPARE(doc.search().moeImbalance, 1.5);
        QCOMPARE(doc.search().capacityFactor, 2.0);
        const Json saved = workspaceToJson(doc.workspace()).at("search");
        QCOMPARE(saved.at("moe_dispatcher").get<std::string>(), std::string("deepep"));
        QCOMPARE(saved.at("moe_imbalance").get<double>(), 1.5);
        QCOMPARE(saved.at("capacity_factor").get<double>(), 2.0);
        const auto profile = doc.model().profile("quickstart");
        QVERIFY(profile.ok());
        const CostOptions cost = searchOptionsFrom(doc.search(), *profile).cost;
        QVERIFY(cost.moeHierarchicalDispatch && !cost.moeA2aOverlap);
        QCOMPARE(cost.moeImbalance, 1.5);
        QCOMPARE(cost.moeCapacityFactor, 2.0);
        // Undo takes the last edit back.
        doc.undoStack()->undo();
        QCOMPARE(doc.search().capacityFactor, 0.0);
    }

    void headroomFinerThanTheBoxIsKept()
    {
        // 0.95555 shows as 95.6 % (one decimal); an edit elsewhere must not write 0.956 back.
        WorkspaceDocument doc;
        QVERIFY(loadInto(doc, quickstartWith(Json{{"memory_headroom", 0.95555}})));
        SearchPanel panel(&doc);
        QCOMPARE(panel.headroomSpin()->text(), QStringLiteral("95.6 %"));
        panel.maxStagesSpin()->setValue(7);
        QCOMPARE(doc.search().maxStages, 7);
        QCOMPARE(doc.search().memoryHeadroom, 0.95555);
        // Editing the box itself does change it.
        panel.headroomSpin()->setValue(50.0);
        QCOMPARE(doc.search().memoryHeadroom, 0.5);
    }

    void panelRangesEqualTheLoaders()
    {
        // The largest value the loader accepts is the box's maximum, and one step above it
        // the loader refuses, naming the key.
        struct Row {
            const char *key;
            Json largest, beyond;
        };
        const Row rows[] = {{"max_stages", 100000, 100001},
                            {"memory_headroom", 0.99, 0.991},
                            {"mcmc_budget", 100000000, 100000001},
                            {"seed", 2147483647LL, 2147483648LL},
                            {"top_k", 100, 101}};
        for (const Row &row : rows) {
            const QString tag = QString::fromLatin1(row.key);
            WorkspaceDocument doc;
            QVERIFY2(loadInto(doc, quickstartWith(Json{{row.key, row.largest}})), row.key);
            auto refused = workspaceFromJson(quickstartWith(Json{{row.key, row.beyond}}), "w.nestws.json");
            QVERIFY2(!refused, row.key);
            QVERIFY2(refused.error().find(row.key) != std::string::npos, refused.error().c_str());
            SearchPanel panel(&doc);
            if (tag == QLatin1String("memory_headroom")) {
                QCOMPARE(panel.headroomSpin()->maximum(), 99.0);
                QCOMPARE(panel.headroomSpin()->value(), 99.0);
                continue;
            }
            QSpinBox *box = tag == QLatin1String("max_stages")    ? panel.maxStagesSpin()
                            : tag == QLatin1String("mcmc_budget") ? panel.mcmcBudgetBox()
                            : tag == QLatin1String("seed")        ? panel.seedBox()
                                                                  : panel.keepBestBox();
            QCOMPARE(static_cast<long long>(box->maximum()), row.largest.get<long long>());
            QCOMPARE(static_cast<long long>(box->value()), row.largest.get<long long>());
        }
    }
};

QTEST_MAIN(TestSearchLimits)
#include "test_search_limits.moc"
