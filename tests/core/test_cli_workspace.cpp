// `nest-cli plan|evaluate --workspace FILE`: the workspace's cluster, model and search
// settings, through the same searchOptionsFrom() the window uses. Drives the real binary.
#include "JsonUtil.h"
#include "SearchSettings.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "CliTestSupport.h"

#include <cmath>
#include <string>

using nest::Json;

namespace {

using clitest::Run;
using clitest::runCli;

const QString kQuickstart = QStringLiteral(NEST_SOURCE_DIR "/sample_configs/workspaces/quickstart.nestws.json");

Json quickstartJson()
{
    const auto j = nest::readJsonFile(kQuickstart.toStdString());
    return j ? *j : Json();
}

bool writeJson(const QString &file, const Json &j)
{
    return static_cast<bool>(nest::writeJsonFile(file.toStdString(), j));
}

bool writeText(const QString &file, const QByteArray &text)
{
    QFile f(file);
    return f.open(QIODevice::WriteOnly) && f.write(text) == text.size();
}

// The command's stdout as JSON (null when it is not JSON).
Json outJson(const Run &r)
{
    return Json::parse(r.out.toStdString(), nullptr, false);
}

QString joined(const std::vector<int> &values)
{
    QStringList parts;
    for (int v : values)
        parts << QString::number(v);
    return parts.join(',');
}

} // namespace

class TestCliWorkspace : public QObject {
    Q_OBJECT
private slots:
    void planWorkspaceEqualsExplicitFlags()
    {
        const Json ws = quickstartJson();
        QVERIFY(ws.is_object());
        QTemporaryDir dir;
        const QString cluster = dir.filePath("cluster.json");
        const QString model = dir.filePath("model.json");
        QVERIFY(writeJson(cluster, ws.at("cluster")));
        QVERIFY(writeJson(model, ws.at("model")));

        // The flags that say what the workspace's search object says; every setting that no
        // flag expresses must be at its default, or this comparison would prove nothing.
        const nest::SearchSettings s = nest::searchSettingsFromJson(ws.at("search"), "search");
        nest::SearchSettings expressible;
        expressible.planner = s.planner;
        expressible.microBatches = s.microBatches;
        expressible.maxStages = s.maxStages;
        expressible.memoryHeadroom = s.memoryHeadroom;
        expressible.allowZero = s.allowZero;
        expressible.allowRecompute = s.allowRecompute;
        QVERIFY2(s == expressible, "the quickstart search settings need flags nest-cli plan does not have");
        QVERIFY(s.memoryHeadroom > 0);  // the sample sets one: the flag below must carry it
        QStringList flags{"plan", "--cluster", cluster, "--model", model, "--json",
                          "--planner", QString::fromStdString(s.planner),
                          "--microbatch", joined(s.microBatches),
                          "--max-stages", QString::number(s.maxStages),
                          "--memory-headroom", QString::number(s.memoryHeadroom, 'g', 17)};
        if (!s.allowZero)
            flags << "--no-zero";
        if (!s.allowRecompute)
            flags << "--no-recompute";

        const Run viaWorkspace = runCli({"plan", "--workspace", kQuickstart, "--json"});
        QVERIFY2(viaWorkspace.exitCode == 0, viaWorkspace.err.constData());
        const Run viaFlags = runCli(flags);
        QVERIFY2(viaFlags.exitCode == 0, viaFlags.err.constData());
        const Json a = outJson(viaWorkspace), b = outJson(viaFlags);
        QVERIFY(a.is_object() && b.is_object());
        QVERIFY(a.at("verified").get<bool>());
        QCOMPARE(a.at("plan").dump(), b.at("plan").dump());
        QCOMPARE(a.at("report").at("iteration_time_s").get<double>(), b.at("report").at("iteration_time_s").get<double>());
        QCOMPARE(a.at("search").dump(), b.at("search").dump());
        QCOMPARE(a.at("search").dump(), nest::searchSettingsToJson(s).dump());
        // The model is the workspace's: its global batch and sequence length.
        QCOMPARE(a.at("plan").at("global_batch").get<int>(), ws.at("model").at("global_batch").get<int>());
        QCOMPARE(a.at("plan").at("seq_length").get<int>(), ws.at("model").at("seq_length").get<int>());

        // Without the headroom flag the defaults differ from the workspace: the settings
        // reported say so (the workspace's headroom is not a default that happens to match).
        const qsizetype at = flags.indexOf("--memory-headroom");
        flags.remove(at, 2);
        const Run noHeadroom = runCli(flags);
        QVERIFY2(noHeadroom.exitCode == 0, noHeadroom.err.constData());
        QCOMPARE(outJson(noHeadroom).at("search").at("memory_headroom").get<double>(), 0.0);
    }

    void explicitFlagsOverrideTheWorkspace()
    {
        const Run r = runCli({"plan", "--workspace", kQuickstart, "--json", "--microbatch", "2", "--no-zero",
                              "--batch", "256"});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const Json j = outJson(r);
        QCOMPARE(j.at("search").at("micro_batches").dump(), std::string("[2]"));
        QCOMPARE(j.at("search").at("allow_zero").get<bool>(), false);
        QCOMPARE(j.at("plan").at("micro_batch").get<int>(), 2);
        QCOMPARE(j.at("plan").at("global_batch").get<int>(), 256);
        for (const Json &stage : j.at("plan").at("stages"))
            QCOMPARE(stage.at("zero").get<int>(), 0);
        // Settings no flag touched stay the workspace's.
        QCOMPARE(j.at("search").at("memory_headroom").get<double>(),
                 quickstartJson().at("search").at("memory_headroom").get<double>());
    }

    void tpCandidatesRestrictThePlan()
    {
        // Unrestricted, the quickstart plan uses tensor parallelism somewhere; restricted
        // to tp 1 by the workspace, no stage does.
        const Run free = runCli({"plan", "--workspace", kQuickstart, "--json"});
        QVERIFY2(free.exitCode == 0, free.err.constData());
        int maxTp = 0;
        const Json freePlan = outJson(free).at("plan");
        for (const Json &stage : freePlan.at("stages"))
            maxTp = std::max(maxTp, stage.at("tp").get<int>());
        QVERIFY2(maxTp > 1, "the unrestricted plan must use tp > 1 for this test to mean anything");

        Json ws = quickstartJson();
        ws["search"]["tp_candidates"] = Json::array({1});
        QTemporaryDir dir;
        const QString file = dir.filePath("tp1.nestws.json");
        QVERIFY(writeJson(file, ws));
        const Run r = runCli({"plan", "--workspace", file, "--json"});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const Json j = outJson(r);
        QVERIFY(j.at("verified").get<bool>());
        QVERIFY(!j.at("plan").at("stages").empty());
        for (const Json &stage : j.at("plan").at("stages"))
            QCOMPARE(stage.at("tp").get<int>(), 1);
        QCOMPARE(j.at("search").at("tp_candidates").dump(), std::string("[1]"));
    }

    void workspaceFrameworkCostsThePlan()
    {
        // The workspace's framework profile is the cost model of plan and evaluate alike;
        // --framework overrides it.
        Json ws = quickstartJson();
        ws["search"]["framework"] = "serial";
        QTemporaryDir dir;
        const QString file = dir.filePath("serial.nestws.json");
        const QString plan = dir.filePath("plan.json");
        QVERIFY(writeJson(file, ws));
        const Run p = runCli({"plan", "--workspace", file, "--out", plan, "--json"});
        QVERIFY2(p.exitCode == 0, p.err.constData());
        const double planned = outJson(p).at("report").at("iteration_time_s").get<double>();
        const Run e = runCli({"evaluate", "--workspace", file, "--plan", plan, "--json"});
        QVERIFY2(e.exitCode == 0, e.err.constData());
        QCOMPARE(outJson(e).at("iteration_time_s").get<double>(), planned);
        const Run direct = runCli({"evaluate", "--workspace", kQuickstart, "--plan", plan, "--framework", "serial", "--json"});
        QVERIFY2(direct.exitCode == 0, direct.err.constData());
        QCOMPARE(outJson(direct).at("iteration_time_s").get<double>(), planned);
        const Run mcore = runCli({"evaluate", "--workspace", file, "--plan", plan, "--framework", "megatron-core", "--json"});
        QVERIFY2(mcore.exitCode == 0, mcore.err.constData());
        QVERIFY(outJson(mcore).at("iteration_time_s").get<double>() < planned);  // overlap hides traffic
        const Run bad = runCli({"evaluate", "--workspace", file, "--plan", plan, "--framework", "jax"});
        QCOMPARE(bad.exitCode, 2);
        QVERIFY(bad.err.contains("--framework expects one of megatron-core"));
    }

    void planThenEvaluateAgree()
    {
        QTemporaryDir dir;
        const QString plan = dir.filePath("plan.json");
        const Run p = runCli({"plan", "--workspace", kQuickstart, "--out", plan, "--json"});
        QVERIFY2(p.exitCode == 0, p.err.constData());
        const Json planned = outJson(p).at("report");

        const Run e = runCli({"evaluate", "--workspace", kQuickstart, "--plan", plan, "--json"});
        QVERIFY2(e.exitCode == 0, e.err.constData());
        const Json evaluated = outJson(e);
        const double tp = planned.at("iteration_time_s").get<double>();
        const double te = evaluated.at("iteration_time_s").get<double>();
        QVERIFY(tp > 0);
        QVERIFY2(std::abs(te - tp) <= 1e-9 * tp, qPrintable(QString("%1 vs %2").arg(te, 0, 'g', 17).arg(tp, 0, 'g', 17)));
        // Memory is judged with the workspace's headroom in both.
        QCOMPARE(evaluated.at("feasible").get<bool>(), planned.at("feasible").get<bool>());
        QCOMPARE(evaluated.at("peak_memory_bytes").get<double>(), planned.at("peak_memory_bytes").get<double>());

        const Run s = runCli({"simulate", "--workspace", kQuickstart, "--plan", plan, "--json"});
        QVERIFY2(s.exitCode == 0, s.err.constData());
        const double ts = outJson(s).at("evaluator_iteration_time_s").get<double>();
        QVERIFY(std::abs(ts - tp) <= 1e-9 * tp);
    }

    void workspaceExcludesClusterAndModel_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::newRow("plan --cluster") << QStringList{"plan", "--workspace", kQuickstart, "--cluster", "paper-v100-8"};
        QTest::newRow("plan --model") << QStringList{"plan", "--workspace", kQuickstart, "--model", "llama2-7b"};
        QTest::newRow("evaluate --cluster")
            << QStringList{"evaluate", "--workspace", kQuickstart, "--cluster", "paper-v100-8", "--tp", "2"};
        QTest::newRow("evaluate --model")
            << QStringList{"evaluate", "--workspace", kQuickstart, "--model", "llama2-7b", "--tp", "2"};
    }

    void workspaceExcludesClusterAndModel()
    {
        QFETCH(QStringList, args);
        const Run r = runCli(args);
        QCOMPARE(r.exitCode, 2);
        const QString err = QString::fromUtf8(r.err);
        QVERIFY2(err.contains("--workspace") && err.contains("--cluster") && err.contains("--model"), r.err.constData());
        QVERIFY(r.out.isEmpty());
    }

    void badWorkspaceNamesFileAndPath_data()
    {
        QTest::addColumn<QString>("command");
        QTest::addColumn<QByteArray>("content");  // empty: the file does not exist
        QTest::addColumn<QString>("mustMention");
        Json ws = quickstartJson();
        Json badLink = ws;
        badLink["cluster"]["levels"][1]["bandwidth_GBps"] = -3;
        Json badMicro = ws;
        badMicro["search"]["micro_batches"] = Json::array({1, 0});
        Json badModel = ws;
        badModel["model"]["hidden"] = -1;
        Json badPlanner = ws;
        badPlanner["search"]["planner"] = "annealing";
        QTest::newRow("missing") << "plan" << QByteArray() << "";
        QTest::newRow("syntax") << "plan" << QByteArray("{\"cluster\": {,}}") << "line 1";
        QTest::newRow("cluster value") << "plan" << QByteArray::fromStdString(badLink.dump())
                                       << "at cluster.levels[1].bandwidth_GBps";
        QTest::newRow("search value") << "evaluate" << QByteArray::fromStdString(badMicro.dump())
                                      << "at search.micro_batches[1]";
        QTest::newRow("model value") << "plan" << QByteArray::fromStdString(badModel.dump()) << "at model.hidden";
        QTest::newRow("unknown planner") << "plan" << QByteArray::fromStdString(badPlanner.dump())
                                         << "at search.planner";
    }

    void badWorkspaceNamesFileAndPath()
    {
        QFETCH(QString, command);
        QFETCH(QByteArray, content);
        QFETCH(QString, mustMention);
        QTemporaryDir dir;
        const QString file = dir.filePath("bad.nestws.json");
        if (!content.isEmpty())
            QVERIFY(writeText(file, content));
        QStringList args{command, "--workspace", file};
        if (command == "evaluate")
            args << "--tp" << "2";
        const Run r = runCli(args);
        QCOMPARE(r.exitCode, 2);
        const QString err = QString::fromUtf8(r.err);
        QVERIFY2(err.contains(file + ":"), r.err.constData());
        QVERIFY2(err.contains(mustMention), r.err.constData());
        QVERIFY(r.out.isEmpty());
    }

    void everyPlannerNameConstructs()
    {
        // A small instance the exhaustive planner enumerates quickly: 8 V100s, 2 blocks.
        QTemporaryDir dir;
        const QString model = dir.filePath("tiny.json");
        QVERIFY(writeJson(model, Json{{"preset", "llama2-7b"}, {"layers", 2}, {"seq_length", 1024},
                                      {"global_batch", 8}}));
        const auto cluster = nest::readJsonFile(NEST_SOURCE_DIR "/sample_configs/clusters/paper-v100-8.json");
        QVERIFY(cluster);
        QVERIFY(!nest::plannerNames().empty());
        for (const std::string &name : nest::plannerNames()) {
            const QString planner = QString::fromStdString(name);
            // By the flag...
            const Run r = runCli({"plan", "--cluster", "paper-v100-8", "--model", model, "--planner", planner,
                                  "--microbatch", "1,2", "--json"});
            QVERIFY2(r.exitCode == 0, qPrintable(planner + ": " + QString::fromUtf8(r.err)));
            const Json j = outJson(r);
            QCOMPARE(j.at("planner").get<std::string>(), name);
            QCOMPARE(j.at("search").at("planner").get<std::string>(), name);
            QVERIFY(j.at("verified").get<bool>());
            // ... and by the workspace's search.planner.
            const Json ws{{"format", "nest-workspace"},
                          {"cluster", *cluster},
                          {"model", {{"preset", "llama2-7b"}, {"layers", 2}, {"seq_length", 1024}, {"global_batch", 8}}},
                          {"search", {{"planner", name}, {"micro_batches", {1, 2}}}}};
            const QString file = dir.filePath(planner + ".nestws.json");
            QVERIFY(writeJson(file, ws));
            const Run w = runCli({"plan", "--workspace", file, "--json"});
            QVERIFY2(w.exitCode == 0, qPrintable(planner + ": " + QString::fromUtf8(w.err)));
            QCOMPARE(outJson(w).at("planner").get<std::string>(), name);
            QCOMPARE(outJson(w).at("plan").dump(), j.at("plan").dump());
        }
        const Run bad = runCli({"plan", "--cluster", "paper-v100-8", "--model", model, "--planner", "annealing"});
        QCOMPARE(bad.exitCode, 2);
        const QString err = QString::fromUtf8(bad.err);
        QVERIFY2(err.contains("annealing"), bad.err.constData());
        for (const std::string &name : nest::plannerNames())
            QVERIFY2(err.contains(QString::fromStdString("'" + name + "'")), bad.err.constData());
    }
};

QTEST_APPLESS_MAIN(TestCliWorkspace)
#include "test_cli_workspace.moc"
