// The real nest-planner executable (issue 2 point 8): `--screenshot FILE` on the quick-start
// workspace and on a cluster file exits 0 with a 1400x900 PNG; a file that cannot be loaded
// exits 2 naming the file on stderr; bad arguments exit 2. The screenshot run neither reads
// nor writes the user's settings (its XDG folders stay empty here). Issue 8 point 10:
// `--run --tab T --export FILE` writes the tab (.png/.svg/.pdf) or the plan (.json); a plan
// exported by the window re-evaluates with `nest-cli evaluate --workspace W --plan P` to the
// iteration time `nest-cli plan --workspace W` finds for the same workspace.
#include "PlanIO.h"

#include <QImage>
#include <QJsonDocument>
#include <QJsonObject>
#include <QImageReader>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "UiTestSupport.h"

using namespace uitest;

namespace {
const QString kPlanner = QStringLiteral(NEST_PLANNER_PATH);
const QString kCli = QStringLiteral(NEST_CLI_PATH);
const QString kCluster = uitest::kClusterSample;

struct Run {
    int exitCode = -1;
    QProcess::ExitStatus status = QProcess::CrashExit;
    QString out, err;
};
} // namespace

class TestAppPlanner : public QObject {
    Q_OBJECT
private:
    QTemporaryDir m_dir;

    Run run(const QStringList &args, const QString &program = kPlanner)
    {
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        env.insert(QStringLiteral("XDG_CONFIG_HOME"), m_dir.filePath(QStringLiteral("config")));
        env.insert(QStringLiteral("XDG_DATA_HOME"), m_dir.filePath(QStringLiteral("data")));
        env.insert(QStringLiteral("XDG_RUNTIME_DIR"), m_dir.path());
        p.setProcessEnvironment(env);
        p.start(program, args);
        Run r;
        if (!p.waitForStarted(10000) || !p.waitForFinished(60000)) {
            p.kill();
            p.waitForFinished(5000);
            r.err = QStringLiteral("did not start or finish: ") + p.errorString();
            return r;
        }
        r.exitCode = p.exitCode();
        r.status = p.exitStatus();
        r.out = QString::fromLocal8Bit(p.readAllStandardOutput());
        r.err = QString::fromLocal8Bit(p.readAllStandardError());
        return r;
    }

    void checkPng(const QString &file)
    {
        QImageReader reader(file);
        QCOMPARE(reader.format(), QByteArray("png"));
        const QImage image = reader.read();
        QVERIFY2(!image.isNull(), qPrintable(reader.errorString()));
        QCOMPARE(image.size(), QSize(1400, 900));
        // Not a blank grab: the window has more than a handful of colours.
        QSet<QRgb> colours;
        for (int y = 0; y < image.height(); y += 7)
            for (int x = 0; x < image.width(); x += 7)
                colours.insert(image.pixel(x, y));
        QVERIFY2(colours.size() > 20, qPrintable(QString::number(colours.size())));
    }

private slots:
    void initTestCase()
    {
        QVERIFY2(QFileInfo(kPlanner).isExecutable(), qPrintable(kPlanner));
    }

    void screenshotOfTheQuickstart()
    {
        const QString png = m_dir.filePath("quickstart.png");
        const Run r = run({kQuickstart, QStringLiteral("--screenshot"), png});
        QVERIFY2(r.status == QProcess::NormalExit && r.exitCode == 0, qPrintable(r.err));
        checkPng(png);
        // The user's settings and data folders were not touched.
        QVERIFY(!QFileInfo::exists(m_dir.filePath("config/nest-planner")));
        QVERIFY(!QFileInfo::exists(m_dir.filePath("data/nest-planner")));
    }

    void screenshotOfAClusterFile()
    {
        const QString png = m_dir.filePath("cluster.png");
        const Run r = run({kCluster, QStringLiteral("--screenshot=") + png});
        QVERIFY2(r.status == QProcess::NormalExit && r.exitCode == 0, qPrintable(r.err));
        checkPng(png);
    }

    void badFileExits2_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QByteArray>("content");   // empty: the file does not exist
        QTest::newRow("malformed") << "broken-cluster.json" << QByteArray("{\"levels\": [");
        QTest::newRow("invalid cluster") << "bad-levels.json"
                                         << QByteArray(R"({"levels": [{"name": "node", "fanout": 0}]})");
        QTest::newRow("missing") << "no-such-file.json" << QByteArray();
    }

    void badFileExits2()
    {
        QFETCH(QString, name);
        QFETCH(QByteArray, content);
        const QString file = m_dir.filePath(name);
        if (!content.isEmpty()) {
            QFile f(file);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(content);
        }
        const QString png = m_dir.filePath(name + ".png");
        const Run r = run({file, QStringLiteral("--screenshot"), png});
        QCOMPARE(r.status, QProcess::NormalExit);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(name), qPrintable(r.err));
        QVERIFY(!QFile::exists(png));
    }

    void badArguments()
    {
        Run r = run({QStringLiteral("--screenshot")});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(QStringLiteral("--screenshot")), qPrintable(r.err));
        r = run({QStringLiteral("--frobnicate")});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(QStringLiteral("--frobnicate")), qPrintable(r.err));
        r = run({QStringLiteral("--help")});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.out.contains(QStringLiteral("usage")), qPrintable(r.out));
    }

    void exportEachTab_data()
    {
        QTest::addColumn<QString>("tab");
        QTest::addColumn<QString>("ext");
        for (const char *tab : {"topology", "placement", "memory", "breakdown", "timeline", "summary"})
            for (const char *ext : {"png", "svg", "pdf"})
                QTest::newRow(qPrintable(QStringLiteral("%1.%2").arg(tab, ext))) << tab << ext;
    }

    void exportEachTab()
    {
        QFETCH(QString, tab);
        QFETCH(QString, ext);
        const QString file = m_dir.filePath(tab + QLatin1Char('.') + ext);
        const Run r = run({kQuickstart, QStringLiteral("--run"), QStringLiteral("--tab"), tab, QStringLiteral("--export"), file});
        QVERIFY2(r.status == QProcess::NormalExit && r.exitCode == 0, qPrintable(r.err));
        const QByteArray bytes = bytesOf(file);
        QVERIFY(bytes.size() > 100);
        if (ext == QLatin1String("png"))
            QVERIFY(!QImage::fromData(bytes, "PNG").isNull());
        else if (ext == QLatin1String("svg"))
            QVERIFY(bytes.contains("<svg"));
        else
            QVERIFY(bytes.startsWith("%PDF"));
    }

    void exportedPlanReevaluatesInTheCli()
    {
        // The window plans the quick-start workspace and exports the plan...
        const QString plan = m_dir.filePath("window-plan.json");
        Run r = run({kQuickstart, QStringLiteral("--run"), QStringLiteral("--export"), plan});
        QVERIFY2(r.status == QProcess::NormalExit && r.exitCode == 0, qPrintable(r.err));
        auto loaded = nest::loadPlan(plan.toStdString());
        QVERIFY2(loaded.ok(), loaded.error().c_str());
        // ...the CLI plans the same workspace: the same plan...
        r = run({QStringLiteral("plan"), QStringLiteral("--workspace"), kQuickstart, QStringLiteral("--json")}, kCli);
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const QJsonObject planned = QJsonDocument::fromJson(r.out.toUtf8()).object();
        const double cliTime = planned.value("report").toObject().value("iteration_time_s").toDouble();
        QVERIFY(cliTime > 0);
        auto cliPlan = nest::planFromJson(nest::Json::parse(r.out.toStdString()).at("plan"), "cli");
        QVERIFY2(cliPlan.ok(), cliPlan.error().c_str());
        QVERIFY(*cliPlan == *loaded);
        // ...and re-evaluates the window's plan to the same iteration time.
        r = run({QStringLiteral("evaluate"), QStringLiteral("--workspace"), kQuickstart, QStringLiteral("--plan"), plan,
                 QStringLiteral("--json")}, kCli);
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const double evaluated = QJsonDocument::fromJson(r.out.toUtf8()).object().value("iteration_time_s").toDouble();
        QVERIFY2(std::abs(evaluated - cliTime) <= 1e-9 * cliTime,
                 qPrintable(QStringLiteral("%1 vs %2").arg(evaluated, 0, 'g', 17).arg(cliTime, 0, 'g', 17)));
    }

    void exportArguments()
    {
        // A plan cannot be exported before there is one... the quick-start carries a pinned
        // plan, a bare cluster does not.
        Run r = run({kCluster, QStringLiteral("--export"), m_dir.filePath("none.json")});
        QCOMPARE(r.exitCode, 4);
        QVERIFY2(r.err.contains(QStringLiteral("none.json")), qPrintable(r.err));
        r = run({kQuickstart, QStringLiteral("--export"), m_dir.filePath("x.bmp")});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(QStringLiteral("x.bmp")), qPrintable(r.err));
        r = run({kQuickstart, QStringLiteral("--tab"), QStringLiteral("sideways")});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(QStringLiteral("sideways")), qPrintable(r.err));
        // The shipped workspace's pinned plan exports without --run.
        const QString pinned = m_dir.filePath("pinned.json");
        r = run({kQuickstart, QStringLiteral("--export"), pinned});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QVERIFY(nest::loadPlan(pinned.toStdString()).ok());
    }

    void helpAndVersionWithoutADisplay()
    {
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("DISPLAY"));
        env.remove(QStringLiteral("WAYLAND_DISPLAY"));
        env.remove(QStringLiteral("QT_QPA_PLATFORM"));
        p.setProcessEnvironment(env);
        for (const QString &arg : {QStringLiteral("--version"), QStringLiteral("--help")}) {
            p.start(kPlanner, {arg});
            QVERIFY(p.waitForFinished(20000));
            QCOMPARE(p.exitStatus(), QProcess::NormalExit);
            QCOMPARE(p.exitCode(), 0);
            const QString out = QString::fromLocal8Bit(p.readAllStandardOutput());
            QVERIFY2(out.contains(arg == QLatin1String("--version") ? QStringLiteral("nest-planner 0.1") : QStringLiteral("usage")),
                     qPrintable(out));
        }
    }

    void unwritablePngExits1()
    {
        const Run r = run({kQuickstart, QStringLiteral("--screenshot"), m_dir.filePath("no/such/dir/x.png")});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains(QStringLiteral("x.png")), qPrintable(r.err));
    }
};

QTEST_GUILESS_MAIN(TestAppPlanner)
#include "test_app_planner.moc"
