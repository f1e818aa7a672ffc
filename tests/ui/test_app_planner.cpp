// The real nest-planner executable (issue 2 point 8): `--screenshot FILE` on the quick-start
// workspace and on a cluster file exits 0 with a 1400x900 PNG; a file that cannot be loaded
// exits 2 naming the file on stderr; bad arguments exit 2. The screenshot run neither reads
// nor writes the user's settings (its XDG folders stay empty here).
#include <QImage>
#include <QImageReader>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "UiTestSupport.h"

using namespace uitest;

namespace {
const QString kPlanner = QStringLiteral(NEST_PLANNER_PATH);
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

    Run run(const QStringList &args)
    {
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        env.insert(QStringLiteral("XDG_CONFIG_HOME"), m_dir.filePath(QStringLiteral("config")));
        env.insert(QStringLiteral("XDG_DATA_HOME"), m_dir.filePath(QStringLiteral("data")));
        env.insert(QStringLiteral("XDG_RUNTIME_DIR"), m_dir.path());
        p.setProcessEnvironment(env);
        p.start(kPlanner, args);
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

    void unwritablePngExits1()
    {
        const Run r = run({kQuickstart, QStringLiteral("--screenshot"), m_dir.filePath("no/such/dir/x.png")});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains(QStringLiteral("x.png")), qPrintable(r.err));
    }
};

QTEST_GUILESS_MAIN(TestAppPlanner)
#include "test_app_planner.moc"
