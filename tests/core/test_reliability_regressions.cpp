// Every input the fuzzers ever crashed on (tests/fuzz/regressions/TARGET-NAME), run through
// the same target function as the fuzzer (tests/fuzz/FuzzTargets.h) in the normal suite: a
// regression aborts or trips a sanitizer here. Plus the hand-made inputs of issue 13.
#include "../fuzz/FuzzTargets.h"

#include <QDir>
#include <QFile>
#include <QtTest>

using namespace nest;

namespace {

using Target = int (*)(const uint8_t *, size_t);

Target targetFor(const QString &fileName)
{
    const QString kind = fileName.section('-', 0, 0);
    if (kind == "cluster")
        return fuzz::cluster;
    if (kind == "model")
        return fuzz::model;
    if (kind == "hfconfig")
        return fuzz::hfConfig;
    if (kind == "profile")
        return fuzz::profile;
    if (kind == "plan")
        return fuzz::plan;
    if (kind == "workspace")
        return fuzz::workspace;
    if (kind == "pipeline")
        return fuzz::pipeline;
    return nullptr;
}

QString regressionsDir()
{
    return QStringLiteral(NEST_SOURCE_DIR "/tests/fuzz/regressions");
}

} // namespace

class TestReliabilityRegressions : public QObject {
    Q_OBJECT
private slots:
    void keptInputs_data()
    {
        QTest::addColumn<QString>("file");
        const QStringList files = QDir(regressionsDir()).entryList(QDir::Files, QDir::Name);
        for (const QString &f : files)
            if (f != "README.md")
                QTest::newRow(qPrintable(f)) << f;
        if (files.isEmpty())
            QTest::newRow("none") << QString();
    }
    void keptInputs()
    {
        QFETCH(QString, file);
        if (file.isEmpty())
            QSKIP("no kept inputs");
        const Target target = targetFor(file);
        QVERIFY2(target, qPrintable("unknown target prefix in " + file + " (cluster-, model-, hfconfig-, profile-, "
                                                                        "plan-, workspace-, pipeline-)"));
        QFile in(regressionsDir() + "/" + file);
        QVERIFY(in.open(QIODevice::ReadOnly));
        const QByteArray data = in.readAll();
        QCOMPARE(target(reinterpret_cast<const uint8_t *>(data.constData()), static_cast<size_t>(data.size())), 0);
    }

    void everySeedStillLoads()
    {
        // The seed corpora are the sample files: the targets run them without complaint.
        int runs = 0;
        const QDir corpus(QStringLiteral(NEST_SOURCE_DIR "/tests/fuzz/corpus"));
        for (const QString &sub : corpus.entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
            const Target target = targetFor(QString(sub).remove('_') + "-");
            QVERIFY2(target, qPrintable(sub));
            const QDir dir(corpus.filePath(sub));
            for (const QString &f : dir.entryList(QDir::Files)) {
                QFile in(dir.filePath(f));
                QVERIFY(in.open(QIODevice::ReadOnly));
                const QByteArray data = in.readAll();
                QCOMPARE(target(reinterpret_cast<const uint8_t *>(data.constData()), static_cast<size_t>(data.size())), 0);
                ++runs;
            }
        }
        QVERIFY(runs >= 40);
    }
};

QTEST_APPLESS_MAIN(TestReliabilityRegressions)
#include "test_reliability_regressions.moc"
