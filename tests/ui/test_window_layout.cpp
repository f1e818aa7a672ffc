// The default window at 1400x900 (issue 5): every column of the property editor's level
// table (name, bandwidth, latency, oversubscription) and the selection form are fully
// visible in the cluster dock, with no horizontal scrolling.
#include "SourceDir.h"
#include "WorkspaceDocument.h"
#include "MainWindow.h"
#include "PropertyEditor.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QLineEdit>
#include <QScrollArea>
#include <QScrollBar>
#include <QTemporaryDir>
#include <QtTest>

#include "UiTestSupport.h"

using namespace nest;
using namespace nest::ui;
using namespace uitest;

namespace {

// True when `w`'s whole width lies inside `area`'s viewport.
bool horizontallyVisible(const QWidget *w, const QScrollArea *area, QString *why)
{
    const QWidget *vp = area->viewport();
    const QPoint left = w->mapTo(vp, QPoint(0, 0));
    const int right = left.x() + w->width();
    *why = QStringLiteral("%1: x %2..%3, viewport width %4").arg(w->objectName()).arg(left.x()).arg(right).arg(vp->width());
    return w->isVisible() && left.x() >= 0 && right <= vp->width();
}
} // namespace

class TestWindowLayout : public QObject {
    Q_OBJECT
private:
    QTemporaryDir m_dir;

private slots:
    void levelTableFitsTheDock_data()
    {
        QTest::addColumn<QString>("file");
        QTest::newRow("quickstart") << kQuickstart;
        QTest::newRow("spine-leaf 1024") << QStringLiteral(NEST_SOURCE_DIR "/sample_configs/clusters/paper-spineleaf-1024.json");
        QTest::newRow("torus3d") << QStringLiteral(NEST_SOURCE_DIR "/sample_configs/clusters/torus3d-tpuv4-64.json");
    }

    void levelTableFitsTheDock()
    {
        QFETCH(QString, file);
        MainWindow w(nullptr, std::make_unique<Settings>(m_dir.filePath("fresh.ini")));
        QString error;
        QVERIFY2(w.openFile(file, &error), qPrintable(error));
        w.resize(1400, 900);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QCoreApplication::processEvents();
        QCOMPARE(w.size(), QSize(1400, 900));

        PropertyEditor *editor = w.propertyEditor();
        auto *area = qobject_cast<QScrollArea *>(editor->parentWidget()->parentWidget());
        QVERIFY(area);
        QVERIFY2(!area->horizontalScrollBar()->isVisible(), "the property form scrolls sideways");
        const int levels = w.document()->topology().levelCount();
        QVERIFY(levels >= 2);
        for (int l = 0; l < levels; ++l) {
            const QList<QWidget *> row{
                editor->findChild<QLineEdit *>(QStringLiteral("levelName%1").arg(l)),
                editor->findChild<QDoubleSpinBox *>(QStringLiteral("levelBandwidth%1").arg(l)),
                editor->findChild<QDoubleSpinBox *>(QStringLiteral("levelLatency%1").arg(l)),
                editor->findChild<QDoubleSpinBox *>(QStringLiteral("levelOversubscription%1").arg(l))};
            for (QWidget *cell : row) {
                QVERIFY(cell);
                QString why;
                QVERIFY2(horizontallyVisible(cell, area, &why), qPrintable(why));
            }
            // The value text fits its box: the box is at least as wide as its text needs.
            auto *bw = static_cast<QDoubleSpinBox *>(row[1]);
            QVERIFY(bw->width() >= bw->fontMetrics().horizontalAdvance(bw->text()));
        }
        for (QLabel *header : editor->findChildren<QLabel *>()) {
            if (!header->text().contains(QStringLiteral("Oversub.")))
                continue;
            QString why;
            QVERIFY2(horizontallyVisible(header, area, &why), qPrintable(why));
        }

        // Select a node: its name, device count and type are visible too.
        int node = -1;
        const Topology &t = w.document()->topology();
        for (int g = 0; g < static_cast<int>(t.groups.size()) && node < 0; ++g)
            if (t.groups[g].level == 0)
                node = g;
        w.document()->setSelection({w.document()->uidOf(node)});
        QCoreApplication::processEvents();
        QVERIFY(!area->horizontalScrollBar()->isVisible());
        for (const QString &name : {QStringLiteral("groupName"), QStringLiteral("deviceCount"), QStringLiteral("deviceType")}) {
            QWidget *wdg = editor->findChild<QWidget *>(name);
            QVERIFY(wdg);
            QString why;
            QVERIFY2(horizontallyVisible(wdg, area, &why), qPrintable(why));
        }
    }
};

QTEST_MAIN(TestWindowLayout)
#include "test_window_layout.moc"
