// `nest-cli compare`, `reproduce --quick`, `completion` and the CLI11 help of every
// sub-command, through the real binary: the JSON contract of compare (keys, order, NEST's
// ratio), usage errors with exit 2, the files reproduce writes (CSV rows derived from the
// grid, figures that are real PNG/SVG, NEST never below a baseline in them), mcmc's seed.
#include "CliTestSupport.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

using clitest::Run;
using clitest::runCli;

class TestCliCompare : public QObject {
    Q_OBJECT
private slots:
    void compareJsonContract();
    void compareTable();
    void compareUsageErrors_data();
    void compareUsageErrors();
    void everyCommandHasHelp_data();
    void everyCommandHasHelp();
    void versionAndTopLevelHelp();
    void mcmcSeedIsReproducible();
    void reproduceQuickWritesTablesAndFigures();
    void reproduceRefusesAFileAsFolder();
    void bashCompletion();
};

void TestCliCompare::compareJsonContract()
{
    const Run r = runCli({"compare", "--cluster", "paper-spineleaf-64", "--model", "llama2-7b", "--planners",
                          "megatron,nest,flat,mcmc", "--budget", "300", "--json"});
    QCOMPARE(r.exitCode, 0);
    const QJsonObject root = QJsonDocument::fromJson(r.out).object();
    const QJsonArray results = root.value("results").toArray();
    QCOMPARE(results.size(), 4);
    const QStringList order{"megatron", "nest", "flat", "mcmc"};
    double nestTime = 0;
    for (int i = 0; i < results.size(); ++i) {
        const QJsonObject row = results[i].toObject();
        for (const char *key : {"planner", "feasible", "report", "plan", "solve_time_s"})
            QVERIFY2(row.contains(key), key);
        QCOMPARE(row.value("planner").toString(), order[i]);
        QVERIFY(row.value("feasible").toBool());
        QVERIFY(row.value("solve_time_s").toDouble() >= 0);
        QVERIFY(row.value("plan").toObject().contains("stages"));
        if (order[i] == "nest")
            nestTime = row.value("report").toObject().value("iteration_time_s").toDouble();
    }
    QVERIFY(nestTime > 0);
    for (const QJsonValue &v : results) {
        const QJsonObject row = v.toObject();
        const double t = row.value("report").toObject().value("iteration_time_s").toDouble();
        QVERIFY(t >= nestTime * (1 - 1e-9));
        QCOMPARE(row.value("nest_ratio").toDouble(), t / nestTime);
    }
}

void TestCliCompare::compareTable()
{
    const Run r = runCli({"compare", "--cluster", "paper-v100-16", "--model", "bert-large", "--planners",
                          "nest,megatron"});
    QCOMPARE(r.exitCode, 0);
    const QString out = QString::fromUtf8(r.out);
    for (const char *word : {"planner", "samples/s", "iter_s", "peak_GB", "shape", "zero", "recompute",
                             "search_s", "NEST/x", "nest ", "megatron ", "tp "})
        QVERIFY2(out.contains(word), word);
    // NEST's own row reads 1.000 in the ratio column.
    const QStringList lines = out.split('\n');
    bool nestRow = false;
    for (const QString &l : lines)
        if (l.startsWith("nest "))
            nestRow = l.trimmed().endsWith("1.000");
    QVERIFY(nestRow);
}

void TestCliCompare::compareUsageErrors_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QStringList>("fragments");
    const QStringList base{"compare", "--cluster", "paper-v100-8", "--model", "bert-large"};
    QTest::newRow("unknown planner") << (base + QStringList{"--planners", "nest,alpa"})
                                     << QStringList{"'alpa'", "megatron", "mcmc"};
    QTest::newRow("twice") << (base + QStringList{"--planners", "nest,flat,nest"}) << QStringList{"'nest' twice"};
    QTest::newRow("empty item") << (base + QStringList{"--planners", "nest,"}) << QStringList{"--planners"};
    QTest::newRow("unknown option") << (base + QStringList{"--planner", "nest"})
                                    << QStringList{"unknown option --planner"};
    QTest::newRow("threads zero") << (base + QStringList{"--threads", "0"}) << QStringList{"--threads"};
    QTest::newRow("budget not a number") << (base + QStringList{"--budget", "many"}) << QStringList{"--budget"};
    QTest::newRow("efficiency below range") << (base + QStringList{"--efficiency", "1e-320"})
                                            << QStringList{"--efficiency", "0.001"};
    QTest::newRow("no cluster") << QStringList{"compare", "--model", "bert-large"} << QStringList{"--cluster"};
    QTest::newRow("stray word") << (base + QStringList{"nest"}) << QStringList{"unexpected argument 'nest'"};
}

void TestCliCompare::compareUsageErrors()
{
    QFETCH(QStringList, args);
    QFETCH(QStringList, fragments);
    const Run r = runCli(args);
    QCOMPARE(r.exitCode, 2);
    QVERIFY(r.out.isEmpty());
    for (const QString &f : fragments)
        QVERIFY2(r.err.contains(f.toUtf8()), qPrintable(f + " not in: " + QString::fromUtf8(r.err)));
}

void TestCliCompare::everyCommandHasHelp_data()
{
    QTest::addColumn<QString>("command");
    QTest::addColumn<QStringList>("flags");
    QTest::newRow("presets") << "presets" << QStringList{"--json"};
    QTest::newRow("inspect") << "inspect" << QStringList{"--cluster FILE|PRESET", "--model", "--seq"};
    QTest::newRow("evaluate") << "evaluate"
                              << QStringList{"--tp N", "--schedule", "--framework", "megatron-core", "--plan FILE"};
    QTest::newRow("simulate") << "simulate" << QStringList{"--out FILE", "timeline"};
    QTest::newRow("plan") << "plan"
                          << QStringList{"--planner NAME", "nest, exhaustive, flat, megatron, mcmc", "--budget N",
                                         "--seed N", "--vpp LIST", "default 1,2,4,8", "--workspace"};
    QTest::newRow("compare") << "compare" << QStringList{"--planners LIST", "nest,flat,megatron,mcmc", "--threads"};
    QTest::newRow("reproduce") << "reproduce" << QStringList{"--out DIR", "--quick"};
}

void TestCliCompare::everyCommandHasHelp()
{
    QFETCH(QString, command);
    QFETCH(QStringList, flags);
    const Run r = runCli({command, "--help"});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.err.isEmpty());
    const QString out = QString::fromUtf8(r.out);
    QVERIFY2(out.contains("Usage: nest-cli " + command), qPrintable(out));
    QVERIFY2(out.contains("Example:\n  nest-cli " + command), qPrintable(out));
    QVERIFY(out.contains("--help"));
    for (const QString &f : flags)
        QVERIFY2(out.contains(f), qPrintable(f + " not in:\n" + out));
    // -h is the same.
    QCOMPARE(runCli({command, "-h"}).out, r.out);
}

void TestCliCompare::versionAndTopLevelHelp()
{
    const Run v = runCli({"--version"});
    QCOMPARE(v.exitCode, 0);
    QVERIFY(QString::fromUtf8(v.out).startsWith("nest-cli " NEST_VERSION));
    const Run h = runCli({"--help"});
    QCOMPARE(h.exitCode, 0);
    for (const char *c : {"compare", "reproduce", "completion", "--help"})
        QVERIFY2(h.out.contains(c), c);
}

void TestCliCompare::mcmcSeedIsReproducible()
{
    const QStringList args{"plan", "--cluster", "paper-fattree-64", "--model", "llama2-7b", "--planner", "mcmc",
                           "--budget", "250", "--json"};
    const Run a = runCli(args + QStringList{"--seed", "11"});
    const Run b = runCli(args + QStringList{"--seed", "11"});
    QCOMPARE(a.exitCode, 0);
    const QJsonObject ja = QJsonDocument::fromJson(a.out).object();
    const QJsonObject jb = QJsonDocument::fromJson(b.out).object();
    QCOMPARE(ja.value("plan"), jb.value("plan"));
    QCOMPARE(ja.value("planner").toString(), QString("mcmc"));
    QCOMPARE(ja.value("states").toInt(), 250);  // one state per evaluation of the budget
}

void TestCliCompare::reproduceQuickWritesTablesAndFigures()
{
    QTemporaryDir dir;
    const QString out = dir.filePath("eval");
    const Run r = runCli({"reproduce", "--quick", "--out", out}, 300000);
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.out.contains("NEST/megatron"));

    // Quick grid: (2 clusters x 2 models x 2 sizes + 1 V100 point) x 4 planners, 4 fixed
    // micro-batches x 4 planners, 2 memory sizes x 4 switch variants x NEST = 60 rows.
    QFile csv(out + "/results.csv");
    QVERIFY(csv.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(csv.readAll()).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 1 + 60);
    const QStringList header = lines.front().split(',');
    const int part = header.indexOf("part"), planner = header.indexOf("planner"), time = header.indexOf("iteration_s"),
              feasible = header.indexOf("feasible");
    QVERIFY(part >= 0 && planner >= 0 && time >= 0 && feasible >= 0);
    // Rows of one point are consecutive, NEST first: NEST is never slower.
    double nest = 0;
    int checked = 0;
    for (int i = 1; i < lines.size(); ++i) {
        const QStringList f = lines[i].split(',');
        if (f[part] == "memory" || f[feasible] != "true")
            continue;
        if (f[planner] == "nest") {
            nest = f[time].toDouble();
            continue;
        }
        QVERIFY(nest > 0);
        QVERIFY2(f[time].toDouble() >= nest * (1 - 1e-5), qPrintable(lines[i]));
        ++checked;
    }
    QCOMPARE(checked, 13 * 3);

    QFile md(out + "/results.md");
    QVERIFY(md.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(md.readAll());
    for (const char *s : {"### Throughput, fat-tree", "### Throughput, spine-leaf", "### Throughput, v100",
                          "Geometric mean", "### Micro-batch sweep", "### Memory ablation", "NEST/megatron"})
        QVERIFY2(text.contains(s), s);

    for (const char *stem : {"throughput-fat-tree-bert-large", "throughput-spine-leaf-llama2-7b",
                             "throughput-v100-bert-large", "microbatch-llama2-7b"}) {
        // A PNG: the signature, then the IHDR chunk with width and height (big-endian).
        QFile png(out + "/" + stem + ".png");
        QVERIFY2(png.open(QIODevice::ReadOnly), stem);
        const QByteArray p = png.readAll();
        QVERIFY(p.startsWith("\x89PNG\r\n\x1a\n") && p.mid(12, 4) == "IHDR");
        auto be32 = [&](int at) {
            return (uchar(p[at]) << 24) | (uchar(p[at + 1]) << 16) | (uchar(p[at + 2]) << 8) | uchar(p[at + 3]);
        };
        QVERIFY(be32(16) >= 600 && be32(20) >= 400);
        QVERIFY(p.size() > 10000);  // lines and text, not an empty canvas
        QFile svg(out + "/" + stem + ".svg");
        QVERIFY(svg.open(QIODevice::ReadOnly));
        const QByteArray s = svg.readAll();
        QVERIFY(s.contains("<svg") && s.contains("nest") && s.contains("megatron"));
    }
}

void TestCliCompare::reproduceRefusesAFileAsFolder()
{
    QTemporaryDir dir;
    QFile f(dir.filePath("taken"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.close();
    const Run r = runCli({"reproduce", "--quick", "--out", dir.filePath("taken")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains("taken") && r.err.contains("output folder"), r.err.constData());
}

void TestCliCompare::bashCompletion()
{
    const Run r = runCli({"completion", "bash"});
    QCOMPARE(r.exitCode, 0);
    for (const char *s : {"complete -F _nest_cli nest-cli", "compare", "reproduce", "--planners", "--budget",
                          "--cluster", "--quick"})
        QVERIFY2(r.out.contains(s), s);
    QCOMPARE(runCli({"completion", "zsh"}).exitCode, 2);
}

QTEST_MAIN(TestCliCompare)
#include "test_cli_compare.moc"
