// Issue 20, point 5: the document holds the model typed (core/formats/ModelSource), parsed once when
// the workspace is read. The workers get that value (a copy sharing the parse), never JSON to
// read again; the model panel edits it through the document's typed setters, each an undo
// step that undo reverts to the very value it replaced.
#include "SourceDir.h"
#include "BaselineRunner.h"
#include "WorkspaceDocument.h"
#include "ModelPanel.h"
#include "PlanLibrary.h"
#include "PlanRunner.h"
#include "UiTestSupport.h"
#include "WindowWording.h"
#include "ModelIO.h"

#include <QCheckBox>
#include <QComboBox>
#include <QSignalSpy>
#include <QSpinBox>
#include <QUndoStack>
#include <QtTest>

using namespace nest;
using namespace nest::ui;

namespace {

// The quickstart workspace with a small model (2 layers) and a fast planner.
Workspace smallWorkspace()
{
    Workspace w = loadWorkspace(uitest::kQuickstart.toStdString()).value();
    w.model = ModelSource(Json{{"preset", "llama2-7b"}, {"layers", 2}, {"seq_length", 1024}, {"global_batch", 16}});
    w.search.planner = "megatron";
    return w;
}

PlanSnapshotPtr snapshotOf(const QSignalSpy &finished, int argument)
{
    return finished.last().at(argument).value<PlanSnapshotPtr>();
}

} // namespace

class TestModelDocument : public QObject {
    Q_OBJECT
private slots:
    // A worker that parsed the model's JSON again would hand back a ModelSource of its own
    // parse: the snapshots must carry the document's value itself.
    void workersGetTheDocumentsTypedModel()
    {
        WorkspaceDocument doc;
        doc.load(smallWorkspace(), QString(), WorkspaceDocument::FileKind::Workspace);
        const ModelSource &model = doc.model();

        PlanRunner runner;
        QSignalSpy finished(&runner, &PlanRunner::finished);
        QSignalSpy failed(&runner, &PlanRunner::failed);
        runner.plan(doc.workspace(), 1, "typed");
        QTRY_COMPARE_WITH_TIMEOUT(finished.count() + failed.count(), 1, 60000);
        QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.last().at(1).toString()));
        const PlanSnapshotPtr planned = snapshotOf(finished, 2);
        QVERIFY(planned->modelSource && planned->modelSource->sharesParseWith(model));
        QCOMPARE(planned->model.seqLength, 1024);

        // Evaluating a plan made for another batch builds the profile from the typed value.
        Plan other = planned->plan();
        other.globalBatch = 32;
        runner.evaluate(doc.workspace(), other, 2, "other batch", "file");
        QTRY_COMPARE_WITH_TIMEOUT(finished.count() + failed.count(), 2, 60000);
        QVERIFY(failed.isEmpty());
        const PlanSnapshotPtr evaluated = snapshotOf(finished, 2);
        QVERIFY(evaluated->modelSource->sharesParseWith(model));
        QCOMPARE(evaluated->model.globalBatch, 32);

        BaselineRunner baselines;
        QSignalSpy done(&baselines, &BaselineRunner::finished);
        baselines.start(doc.workspace(), {QStringLiteral("megatron")}, QString());
        QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 60000);
        const auto plans = done.last().at(0).value<QList<PlanSnapshotPtr>>();
        QCOMPARE(plans.size(), 1);
        QVERIFY(plans.first()->modelSource->sharesParseWith(model));

        // A pinned plan keeps the typed value it was planned with; its evaluation (the plan
        // library's worker) uses it, or the workspace's when it has none.
        const PinnedPlan pin = pinnedPlanOf(*planned);
        QVERIFY(pin.model && pin.model->sharesParseWith(model));
        QVERIFY(snapshotOfPinned(pin, ModelSource())->modelSource->sharesParseWith(model));
        PinnedPlan bare = pin;
        bare.model.reset();
        QVERIFY(snapshotOfPinned(bare, model)->modelSource->sharesParseWith(model));
        QVERIFY(doc.pinPlan(pin));
        PlanLibrary library(&doc);
        QVERIFY(!library.snapshot(0));   // evaluated on the library's worker
        library.waitForEvaluations();
        QTRY_VERIFY_WITH_TIMEOUT(library.snapshot(0) != nullptr, 20000);
        QVERIFY(library.snapshot(0)->modelSource->sharesParseWith(model));
    }

    // Every panel edit goes through a typed setter: the typed model changes, the JSON the
    // file will hold follows, and undo restores the value the edit replaced.
    void panelEditsAreTypedAndUndoable()
    {
        WorkspaceDocument doc;
        doc.load(loadWorkspace(uitest::kQuickstart.toStdString()).value(), QString(),
                 WorkspaceDocument::FileKind::Workspace);
        ModelPanel panel(&doc);
        QSignalSpy status(&panel, &ModelPanel::statusMessage);
        const ModelSource loaded = doc.model();
        QVERIFY(loaded.isPreset());

        auto *layers = panel.findChild<QSpinBox *>(QStringLiteral("layers"));
        QVERIFY(layers);
        layers->setValue(16);
        QCOMPARE(doc.model().config("model")->layers, 16);
        QCOMPARE(doc.model().profile("model")->seqLength, 4096);   // the run settings stay
        QCOMPARE(doc.model().toJson().at("layers").get<int>(), 16);
        QCOMPARE(doc.undoStack()->count(), 1);
        doc.undoStack()->undo();
        QVERIFY(doc.model().sharesParseWith(loaded));   // the value itself, not a re-read
        QCOMPARE(layers->value(), 32);

        auto *seq = panel.findChild<QSpinBox *>(QStringLiteral("seqLength"));
        seq->setValue(2048);
        QCOMPARE(doc.model().profile("model")->seqLength, 2048);
        QVERIFY(doc.model().isPreset());   // a preset stays a preset with run settings
        doc.undoStack()->undo();
        QVERIFY(doc.model().sharesParseWith(loaded));

        auto *flash = panel.findChild<QCheckBox *>(QStringLiteral("flashAttention"));
        flash->setChecked(!flash->isChecked());
        QCOMPARE(doc.model().config("model")->flashAttention, flash->isChecked());
        doc.undoStack()->undo();
        QVERIFY(doc.model().sharesParseWith(loaded));

        auto *preset = panel.findChild<QComboBox *>(QStringLiteral("modelPreset"));
        preset->setCurrentIndex(preset->findText(QStringLiteral("bert-large")));
        QCOMPARE(doc.model().config("model")->name, std::string("bert-large"));
        doc.undoStack()->undo();
        QVERIFY(doc.model().sharesParseWith(loaded));

        // A refused edit: nothing changes, no undo entry, the panel says why.
        const int steps = doc.undoStack()->count();
        auto *heads = panel.findChild<QSpinBox *>(QStringLiteral("heads"));
        heads->setValue(7);   // 7 does not divide hidden 4096
        QVERIFY(doc.model().sharesParseWith(loaded));
        QCOMPARE(doc.undoStack()->count(), steps);
        QVERIFY(!status.isEmpty());
        QVERIFY2(status.last().at(0).toString().startsWith(QStringLiteral("Model not changed: ")),
                 qPrintable(status.last().at(0).toString()));

        // The setters themselves.
        QString refusal;
        ModelConfig bad = *doc.model().config("model");
        bad.heads = 7;
        QVERIFY(!doc.setModelConfig(bad, &refusal));
        QVERIFY(!refusal.isEmpty());
        QVERIFY(doc.setModelRunSettings(1024, 64, &refusal));
        QCOMPARE(doc.model().profile("model")->globalBatch, 64);
        QVERIFY(doc.setModelPreset(QStringLiteral("gpt3-35b"), std::nullopt));
        QCOMPARE(doc.model().toJson(), (Json{{"preset", "gpt3-35b"}}));
        doc.undoStack()->undo();
        doc.undoStack()->undo();
        QVERIFY(doc.model().sharesParseWith(loaded));
    }
    // Issue 25, point 3: a preset brings its own sequence length and batch (what nest-cli
    // --model NAME plans), from the preset table, and the panel says so.
    void presetBringsItsOwnRunSettings()
    {
        WorkspaceDocument doc;
        doc.load(loadWorkspace(uitest::kQuickstart.toStdString()).value(), QString(),
                 WorkspaceDocument::FileKind::Workspace);
        ModelPanel panel(&doc);
        QSignalSpy status(&panel, &ModelPanel::statusMessage);
        auto *seq = panel.findChild<QSpinBox *>(QStringLiteral("seqLength"));
        auto *batch = panel.findChild<QSpinBox *>(QStringLiteral("globalBatch"));
        QCOMPARE(seq->value(), 4096);  // the quickstart's model
        const auto table = std::find_if(modelPresets().begin(), modelPresets().end(),
                                        [](const ModelConfig &m) { return m.name == "gpt3-175b"; });
        QVERIFY(table != modelPresets().end());
        QCOMPARE(table->seqLength, 2048);  // GPT-3's n_ctx (Brown et al. 2020, Table 2.1)
        auto *preset = panel.findChild<QComboBox *>(QStringLiteral("modelPreset"));
        preset->setCurrentIndex(preset->findText(QStringLiteral("gpt3-175b")));
        QCOMPARE(doc.model().profile("model")->seqLength, table->seqLength);
        QCOMPARE(doc.model().profile("model")->globalBatch, table->globalBatch);
        QCOMPARE(seq->value(), table->seqLength);
        QCOMPARE(batch->value(), table->globalBatch);
        QVERIFY(!status.isEmpty());
        QVERIFY2(status.last().at(0).toString().contains(QStringLiteral("sequence length 2048")),
                 qPrintable(status.last().at(0).toString()));
    }
    // A measured profile hides the previous model's hyperparameters; the bundled NEST artifact
    // input (its shape only in its name: _mbs_1_sl_4096_) loads with 4096 tokens and a batch
    // that can be edited, while its sequence length cannot change (measured at 4096).
    void profileImportShowsTheProfilesOwnSettings()
    {
        WorkspaceDocument doc;
        doc.load(loadWorkspace(uitest::kQuickstart.toStdString()).value(), QString(),
                 WorkspaceDocument::FileKind::Workspace);
        ModelPanel panel(&doc);
        panel.show();
        auto *layers = panel.findChild<QSpinBox *>(QStringLiteral("layers"));
        auto *seq = panel.findChild<QSpinBox *>(QStringLiteral("seqLength"));
        QVERIFY(layers->isVisibleTo(&panel));
        const QString file = QStringLiteral(NEST_SOURCE_DIR "/sample_configs/profiles/ilp_llama2_llama2_mbs_1_sl_4096_dev64.json");
        QVERIFY(panel.importFile(file));
        QVERIFY(!layers->isVisibleTo(&panel));
        const auto p = doc.model().profile("model");
        QVERIFY2(p.ok(), p.ok() ? "" : p.error().c_str());
        QCOMPARE(p->seqLength, 4096);
        QVERIFY(seq->isEnabled());
        QCOMPARE(seq->value(), 4096);
        QSignalSpy status(&panel, &ModelPanel::statusMessage);
        seq->setValue(2048);  // refused: the panel says why and shows the measured value again
        QCOMPARE(doc.model().profile("model")->seqLength, 4096);
        QCOMPARE(seq->value(), 4096);
        QVERIFY(!status.isEmpty());
        QVERIFY(status.last().at(0).toString().contains(QStringLiteral("measured at sequence length 4096")));
    }
    void messagesNameTheWindowsControlsNotCliFlags()
    {
        const QString core = QStringLiteral("the sequence length is not known; give it with --seq N (the paper's "
                                            "inputs), or a smaller --max-stages");
        const QString shown = windowWording(core);
        QVERIFY2(!shown.contains(QStringLiteral("--")), qPrintable(shown));
        QVERIFY(shown.contains(QStringLiteral("Sequence length")));
        QVERIFY(shown.contains(QStringLiteral("Max stages")));
        QCOMPARE(windowWording(QStringLiteral("no flags here")), QStringLiteral("no flags here"));
    }
};

QTEST_MAIN(TestModelDocument)
#include "test_model_document.moc"
