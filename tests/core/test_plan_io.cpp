// Plan JSON: round trip, error messages with file and JSON path, the sample plan, and the
// report object's keys.
#include "Evaluator.h"
#include "PlanBuilder.h"
#include "PlanIO.h"

#include <QTemporaryDir>
#include <QtTest>

using namespace nest;

namespace {
Plan samplePlan()
{
    Plan p;
    p.globalBatch = 8;
    p.microBatch = 2;
    p.seqLength = 128;
    p.schedule = Schedule::Interleaved;
    p.virtualStages = 2;
    p.dp = 2;
    for (int k = 0; k < 4; ++k) {
        StagePlan s;
        s.firstLayer = k;
        s.endLayer = k + 1;
        s.tp = 2;
        s.ep = k % 2 ? 2 : 1;
        s.sp = true;
        s.zero = k % 4;
        s.recompute = k == 3 ? Recompute::Full : (k == 2 ? Recompute::Selective : Recompute::None);
        s.devices = k % 2 ? std::vector<std::vector<int>>{{4, 5}, {6, 7}} : std::vector<std::vector<int>>{{0, 1}, {2, 3}};
        p.stages.push_back(s);
    }
    return p;
}
} // namespace

class TestPlanIO : public QObject {
    Q_OBJECT
private slots:
    void roundTrip()
    {
        const Plan p = samplePlan();
        const auto back = planFromJson(planToJson(p), "mem");
        QVERIFY2(back.ok(), back.error().c_str());
        QVERIFY(*back == p);
        QTemporaryDir dir;
        const std::string file = dir.filePath("p.json").toStdString();
        QVERIFY(savePlan(file, p).ok());
        const auto loaded = loadPlan(file);
        QVERIFY2(loaded.ok(), loaded.error().c_str());
        QVERIFY(*loaded == p);
    }
    void errors_data()
    {
        QTest::addColumn<QString>("json");
        QTest::addColumn<QString>("expect");
        const QString good = QString::fromStdString(planToJson(samplePlan()).dump());
        QTest::newRow("not an object") << "[1]" << "expected an object";
        QTest::newRow("missing stages") << R"({"global_batch":8,"seq_length":128,"dp":1})" << "at stages: required";
        QTest::newRow("bad schedule") << QString(good).replace("\"interleaved\"", "\"zigzag\"")
                                      << "at schedule: unknown schedule";
        QTest::newRow("bad zero") << QString(good).replace("\"zero\":3", "\"zero\":5") << "at stages[3].zero";
        QTest::newRow("row width") << QString(good).replace("[[4,5],[6,7]]", "[[4,5],[6]]")
                                   << "at stages[1].devices[1]: lists 1 devices";
        QTest::newRow("replicas") << QString(good).replace("[[4,5],[6,7]]", "[[4,5]]")
                                  << "at stages[1].devices: lists 1 replicas";
        QTest::newRow("device type") << QString(good).replace("[[4,5],[6,7]]", "[[4,\"x\"],[6,7]]")
                                     << "at stages[1].devices[0][1]: expected a number";
        QTest::newRow("batch split") << QString(good).replace("\"global_batch\":8", "\"global_batch\":6")
                                     << "at global_batch: must be a multiple";
    }
    void errors()
    {
        QFETCH(QString, json);
        QFETCH(QString, expect);
        const auto j = parseJsonText(json.toStdString(), "plan.json");
        QVERIFY(j.ok());
        const auto r = planFromJson(*j, "plan.json");
        QVERIFY(!r.ok());
        QVERIFY2(r.error().rfind("plan.json: ", 0) == 0, r.error().c_str());
        QVERIFY2(r.error().find(expect.toStdString()) != std::string::npos, r.error().c_str());
    }
    void fileErrors()
    {
        QTemporaryDir dir;
        const auto missing = loadPlan(dir.filePath("none.json").toStdString());
        QVERIFY(!missing.ok());
        QVERIFY(missing.error().find("no such file") != std::string::npos);
        const auto isDir = loadPlan(dir.path().toStdString());
        QVERIFY(!isDir.ok());
    }
    void sampleFilesLoad()
    {
        const QDir dir(QStringLiteral(NEST_SOURCE_DIR "/sample_configs/plans"));
        const QStringList files = dir.entryList({"*.json"}, QDir::Files);
        QVERIFY(!files.isEmpty());
        for (const QString &f : files) {
            const auto p = loadPlan(dir.filePath(f).toStdString());
            QVERIFY2(p.ok(), p.error().c_str());
        }
    }
    void reportKeys()
    {
        DeviceSpec dev{"r", 100e12, 80e9, 1e12, 0.5, ""};
        const Topology topo = Topology::uniform("r", dev, {{"node", 4, {100e9, 0, 1}}});
        ModelProfile m;
        m.seqLength = 128;
        LayerProfile l;
        l.fwdFlops = 1e12;
        l.bwdFlops = 2e12;
        l.params = l.tpParams = 1e6;
        m.layers = {l, l};
        UniformLayout u;
        u.pp = 2;
        u.dp = 2;
        u.globalBatch = 4;
        u.seqLength = 128;
        const Report r = evaluate(*buildUniformPlan(u, topo, m), topo, m);
        const Json j = reportToJson(r);
        for (const char *key : {"iteration_time_s", "throughput_samples_per_s", "tokens_per_s", "mfu", "feasible",
                                "peak_memory_bytes", "stages", "devices", "reasons"})
            QVERIFY2(j.contains(key), key);
        QCOMPARE(j["stages"].size(), size_t(2));
        QCOMPARE(j["devices"].size(), size_t(4));
        QCOMPARE(j["iteration_time_s"].get<double>(), r.iterationTime);
        QCOMPARE(j["stages"][1]["time_s"]["forward"].get<double>(), r.stages[1].cost.forward);
    }
};

QTEST_APPLESS_MAIN(TestPlanIO)
#include "test_plan_io.moc"
