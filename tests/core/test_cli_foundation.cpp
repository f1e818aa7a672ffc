// The nest-cli contract of the foundation issue: `presets` and `inspect`, their JSON keys,
// exit codes (0 success, 2 bad input with the message on stderr) and the printed counts.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "CliTestSupport.h"

namespace {

using clitest::Run;
using clitest::runCli;

QString sample(const QString &rel) { return QStringLiteral(NEST_SOURCE_DIR "/") + rel; }

} // namespace

class TestCliFoundation : public QObject {
    Q_OBJECT
private slots:
    void presetsJsonListsEverything()
    {
        const Run r = runCli({"presets", "--json"});
        QCOMPARE(r.exitCode, 0);
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        QStringList devices;
        for (const auto &d : o["devices"].toArray())
            devices << d.toObject()["name"].toString();
        for (const char *name : {"v100-32gb", "a100-80gb", "h100-sxm-80gb", "h200", "tpuv4", "b200", "mi300x"})
            QVERIFY2(devices.contains(name), name);
        QStringList models;
        for (const auto &m : o["models"].toArray())
            models << m.toObject()["name"].toString();
        for (const char *name : {"llama2-7b", "llama3-70b", "bert-large", "gpt3-175b", "gpt3-35b", "mixtral-8x7b"})
            QVERIFY2(models.contains(name), name);
        QStringList templates;
        for (const auto &t : o["cluster_templates"].toArray())
            templates << t.toObject()["key"].toString();
        for (const char *name : {"fat-tree", "spine-leaf", "superpod", "torus2d", "torus3d"})
            QVERIFY2(templates.contains(name), name);
    }

    void presetsTableIsHumanReadable()
    {
        const Run r = runCli({"presets"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(r.out.contains("h100-sxm-80gb"));
        QVERIFY(r.out.contains("mixtral-8x7b"));
    }

    void inspectCompactClusterFile()
    {
        // sample_configs/clusters/a100-512.json is the issue's example: 8 x 4 x 16 = 512
        // devices on three levels, the spine 2:1 oversubscribed.
        const Run r = runCli({"inspect", "--cluster", sample("sample_configs/clusters/a100-512.json"), "--json"});
        QCOMPARE(r.exitCode, 0);
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(o["devices"].toInt(), 512);
        const QJsonArray levels = o["levels"].toArray();
        QCOMPARE(levels.size(), 3);
        QCOMPARE(levels[0].toObject()["bandwidth_GBps"].toDouble(), 300.0);
        QCOMPARE(levels[2].toObject()["oversubscription"].toDouble(), 2.0);
        QCOMPARE(levels[1].toObject()["groups"].toInt(), 16);  // 16 racks
    }

    void inspectModelCounts_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<double>("published");
        QTest::addColumn<double>("publishedActive");
        // Published totals: Touvron et al. 2023 (Llama 2 7B: 6.74 B); Brown et al. 2020
        // (GPT-3: 175 B); Jiang et al. 2024 (Mixtral 8x7B: 46.7 B total, 12.9 B active).
        QTest::newRow("llama2-7b") << "llama2-7b" << 6.74e9 << 6.74e9;
        QTest::newRow("gpt3-175b") << "gpt3-175b" << 175e9 << 175e9;
        QTest::newRow("mixtral-8x7b") << "mixtral-8x7b" << 46.7e9 << 12.9e9;
    }

    void inspectModelCounts()
    {
        QFETCH(QString, model);
        QFETCH(double, published);
        QFETCH(double, publishedActive);
        const Run r = runCli({"inspect", "--model", model, "--json"});
        QCOMPARE(r.exitCode, 0);
        const QJsonObject o = QJsonDocument::fromJson(r.out).object();
        for (const char *key : {"devices", "levels", "parameters", "active_parameters", "flops_per_token"})
            QVERIFY2(o.contains(key), key);
        QVERIFY(std::abs(o["parameters"].toDouble() / published - 1) < 0.01);
        QVERIFY(std::abs(o["active_parameters"].toDouble() / publishedActive - 1) < 0.01);
        // Training FLOPs per token are at least 6 x active parameters (Kaplan et al. 2020:
        // 2 forward + 4 backward per parameter) plus attention, and not wildly more.
        const double f = o["flops_per_token"].toDouble();
        QVERIFY(f >= 6 * publishedActive * 0.98);
        QVERIFY(f <= 6 * publishedActive * 1.6);
    }

    void inspectPrintsCounts()
    {
        const Run r = runCli({"inspect", "--cluster", "paper-v100-16", "--model", "llama2-7b"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(r.out.contains("16 devices"));
        QVERIFY(r.out.contains("6.7"));
    }

    void badInputExitsTwo_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("mustMention");
        QTemporaryDir dir;
        QTest::newRow("no args") << QStringList{} << "usage";
        QTest::newRow("unknown command") << QStringList{"frobnicate"} << "unknown command";
        QTest::newRow("unknown option") << QStringList{"presets", "--jsn"} << "--jsn";
        QTest::newRow("unknown preset") << QStringList{"inspect", "--cluster", "no-such-cluster"} << "no-such-cluster";
        QTest::newRow("unknown model") << QStringList{"inspect", "--model", "gpt5"} << "gpt5";
        QTest::newRow("missing value") << QStringList{"inspect", "--model"} << "needs a value";
        QTest::newRow("nothing to inspect") << QStringList{"inspect"} << "--cluster";
        QTest::newRow("bad seq") << QStringList{"inspect", "--model", "llama2-7b", "--seq", "-5"} << "--seq";
        QTest::newRow("directory") << QStringList{"inspect", "--cluster", QStringLiteral(NEST_SOURCE_DIR)} << "directory";
    }

    void badInputExitsTwo()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, mustMention);
        const Run r = runCli(args);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(QString::fromUtf8(r.err).contains(mustMention, Qt::CaseInsensitive), r.err.constData());
        QVERIFY(r.out.isEmpty());
    }

    void malformedFileNamesFileAndPlace()
    {
        QTemporaryDir dir;
        const QString file = dir.filePath("broken.json");
        QFile f(file);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("{\"name\": \"x\", \"device\": \"a100-80gb\",\n \"levels\": [ {\"name\": \"node\", \"fanout\": 8,, } ]}");
        f.close();
        const Run r = runCli({"inspect", "--cluster", file});
        QCOMPARE(r.exitCode, 2);
        const QString err = QString::fromUtf8(r.err);
        QVERIFY2(err.contains(file), r.err.constData());
        QVERIFY2(err.contains("line 2"), r.err.constData());

        QFile g(dir.filePath("negative.json"));
        QVERIFY(g.open(QIODevice::WriteOnly));
        g.write(R"({"name": "x", "device": "a100-80gb", "levels": [{"name": "node", "fanout": 8, "bandwidth_GBps": -3, "latency_us": 1}]})");
        g.close();
        const Run r2 = runCli({"inspect", "--cluster", g.fileName()});
        QCOMPARE(r2.exitCode, 2);
        const QString err2 = QString::fromUtf8(r2.err);
        QVERIFY2(err2.contains(g.fileName()) && err2.contains("levels[0].bandwidth_GBps"), r2.err.constData());
    }
};

QTEST_APPLESS_MAIN(TestCliFoundation)
#include "test_cli_foundation.moc"
