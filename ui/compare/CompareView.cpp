#include "CompareView.h"

#include "BreakdownChartView.h"
#include "ComparisonReport.h"
#include "Glossary.h"
#include "MemoryChartView.h"
#include "PlacementThumbnail.h"

#include <QComboBox>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QResizeEvent>
#include <QScrollArea>
#include <QScrollBar>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace nest::ui {

namespace {

const QColor kBestBackground(0xd4, 0xed, 0xda);

QVariant number(double v)
{
    return std::isnan(v) ? QVariant() : QVariant(v);
}

} // namespace

CompareView::CompareView(QWidget *parent)
    : QWidget(parent)
    , m_referenceCombo(new QComboBox(this))
    , m_placeholder(new QLabel(tr("Pin two or more plans and select them in the plan list to compare"), this))
    , m_note(new QLabel(this))
    , m_scroll(new QScrollArea(this))
    , m_table(new QTableWidget(this))
    , m_columns(new QGridLayout)
{
    setObjectName(QStringLiteral("compareView"));
    m_referenceCombo->setObjectName(QStringLiteral("compareReference"));
    m_referenceCombo->setToolTip(tr("The plan the others are compared with (differences and ratios)"));
    m_placeholder->setObjectName(QStringLiteral("comparePlaceholder"));
    m_placeholder->setAlignment(Qt::AlignCenter);
    m_placeholder->setWordWrap(true);
    m_note->setObjectName(QStringLiteral("compareNote"));
    m_note->hide();
    m_table->setObjectName(QStringLiteral("compareMetrics"));
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionMode(QAbstractItemView::NoSelection);
    m_table->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_table->setWordWrap(true);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    // Narrower than this, the table scrolls sideways under its fixed metric names.
    m_table->horizontalHeader()->setMinimumSectionSize(190);
    m_table->setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
    connect(m_table->horizontalHeader(), &QHeaderView::sectionResized, this, [this] { fitTableHeight(); });

    auto *top = new QHBoxLayout;
    auto *title = new QLabel(tr("<b>Plan comparison</b>"), this);
    top->addWidget(title);
    top->addStretch(1);
    top->addWidget(new QLabel(tr("Reference:"), this));
    top->addWidget(m_referenceCombo);
    connect(m_referenceCombo, &QComboBox::currentIndexChanged, this, [this](int index) {
        if (index >= 0)
            setReference(index);
    });

    auto *content = new QWidget;
    content->setObjectName(QStringLiteral("compareContent"));
    auto *contentLayout = new QVBoxLayout(content);
    contentLayout->addWidget(m_table);
    contentLayout->addLayout(m_columns);
    contentLayout->addStretch(1);
    m_scroll->setWidget(content);  // the scroll area owns it
    m_scroll->setWidgetResizable(true);
    m_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);   // the columns wrap instead
    // The columns follow the page's own width (the viewport is laid out after this view's
    // resize event, and loses width to the vertical scroll bar).
    m_scroll->viewport()->installEventFilter(this);

    auto *layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addWidget(m_note);
    layout->addWidget(m_placeholder, 1);
    layout->addWidget(m_scroll, 1);
    setSnapshots({});
}

void CompareView::setSnapshots(const QList<PlanSnapshotPtr> &plans, int reference)
{
    m_plans.clear();
    for (const PlanSnapshotPtr &s : plans)
        if (s && m_plans.size() < maxPlans)
            m_plans << s;
    const qsizetype given = std::count_if(plans.begin(), plans.end(), [](const PlanSnapshotPtr &s) { return bool(s); });
    m_note->setText(tr("Showing the first %1 of %2 plans").arg(maxPlans).arg(given));
    m_note->setVisible(given > maxPlans);
    m_reference = m_plans.isEmpty() ? 0 : std::clamp(reference, 0, int(m_plans.size()) - 1);
    {
        const QSignalBlocker block(m_referenceCombo);
        m_referenceCombo->clear();
        for (const PlanSnapshotPtr &s : m_plans)
            m_referenceCombo->addItem(QString::fromStdString(s->label));
        m_referenceCombo->setCurrentIndex(m_plans.isEmpty() ? -1 : m_reference);
    }
    const bool enough = m_plans.size() >= 2;
    m_referenceCombo->setEnabled(enough);
    m_placeholder->setVisible(!enough);
    m_scroll->setVisible(enough);
    rebuildColumns();
    m_metrics = compareMetrics(comparedPlans(m_plans), m_reference);
    fillTable();
}

void CompareView::setReference(int index)
{
    if (m_plans.isEmpty())
        return;
    index = std::clamp(index, 0, int(m_plans.size()) - 1);
    if (index == m_reference && m_referenceCombo->currentIndex() == index)
        return;
    m_reference = index;
    {
        const QSignalBlocker block(m_referenceCombo);
        m_referenceCombo->setCurrentIndex(index);
    }
    m_metrics = compareMetrics(comparedPlans(m_plans), m_reference);
    fillTable();
    emit referenceChanged(index);
}

void CompareView::rebuildColumns()
{
    qDeleteAll(m_columnWidgets);
    m_columnWidgets.clear();
    m_headers.clear();
    m_memoryCharts.clear();
    m_breakdownCharts.clear();
    m_thumbnails.clear();
    m_planWidgets.clear();
    m_perRow = 0;
    QWidget *content = m_scroll->widget();
    QList<PlotView *> memory, breakdown;
    for (int i = 0; i < m_plans.size(); ++i) {
        const PlanSnapshot &s = *m_plans[i];
        auto *header = new QLabel(content);
        header->setObjectName(QStringLiteral("compareHeader%1").arg(i));
        header->setWordWrap(true);
        header->setTextFormat(Qt::RichText);
        header->setText(QStringLiteral("<b>%1</b><br>%2<br>%3")
                            .arg(QString::fromStdString(s.label).toHtmlEscaped(),
                                 tr("planner: %1").arg(QString::fromStdString(s.planner)).toHtmlEscaped(),
                                 clusterText(s).toHtmlEscaped()));
        header->setToolTip(settingsSummary(s));
        auto *thumb = new PlacementThumbnail(content);
        thumb->setSnapshot(m_plans[i]);
        m_columnWidgets << header << thumb;
        m_headers << header;
        m_thumbnails << thumb;
        const QString why = infeasibleText(s);
        if (!why.isEmpty()) {
            auto *reason = new QLabel(tr("No charts: %1").arg(why), content);
            reason->setObjectName(QStringLiteral("compareInfeasible%1").arg(i));
            reason->setWordWrap(true);
            reason->setAlignment(Qt::AlignTop | Qt::AlignLeft);
            reason->setStyleSheet(QStringLiteral("QLabel { color: #a01c1c; }"));
            m_columnWidgets << reason;
            m_planWidgets.append({header, thumb, reason, nullptr});
            continue;
        }
        auto *mem = new MemoryChartView(content);
        auto *time = new BreakdownChartView(content);
        mem->setSnapshot(m_plans[i]);
        time->setSnapshot(m_plans[i]);
        // Tall enough for a narrow column's legend, wrapped into more rows (PlotView), above
        // a plot of its own: the breakdown legend has ten entries.
        mem->setMinimumHeight(kMemoryChartHeight);
        time->setMinimumHeight(kBreakdownChartHeight);
        m_columnWidgets << mem << time;
        m_planWidgets.append({header, thumb, mem, time});
        m_memoryCharts << mem;
        m_breakdownCharts << time;
        memory << mem;
        breakdown << time;
    }
    shareValueAxes(memory, 1.1);
    shareValueAxes(breakdown, 1.05);
    layoutColumns();
}

void CompareView::layoutColumns()
{
    const int n = int(m_planWidgets.size());
    const int width = m_scroll->viewport()->width();
    const int perRow = n == 0 ? 0 : std::clamp(width / kMinChartWidth, 1, n);
    if (perRow == m_perRow)
        return;
    m_perRow = perRow;
    for (const auto &widgets : m_planWidgets)
        for (QWidget *w : widgets)
            if (w)
                m_columns->removeWidget(w);
    for (int c = 0; c < m_columns->columnCount(); ++c)
        m_columns->setColumnStretch(c, c < perRow ? 1 : 0);   // equal columns, feasible or not
    for (int i = 0; i < n; ++i) {
        const auto &w = m_planWidgets[i];
        const int row = 4 * (i / perRow), column = i % perRow;
        m_columns->addWidget(w[0], row, column);
        m_columns->addWidget(w[1], row + 1, column);
        if (w[3]) {
            m_columns->addWidget(w[2], row + 2, column);
            m_columns->addWidget(w[3], row + 3, column);
        } else {
            m_columns->addWidget(w[2], row + 2, column, 2, 1);
        }
    }
    for (int c = 0; c < perRow; ++c)
        m_columns->setColumnStretch(c, 1);
}

void CompareView::resizeEvent(QResizeEvent *event)
{
    QWidget::resizeEvent(event);
    layoutColumns();
    fitTableHeight();
}

bool CompareView::eventFilter(QObject *watched, QEvent *event)
{
    if (watched == m_scroll->viewport() && event->type() == QEvent::Resize)
        layoutColumns();
    return QWidget::eventFilter(watched, event);
}

void CompareView::fillTable()
{
    const int n = int(m_plans.size());
    m_table->clear();
    m_table->setColumnCount(n);
    m_table->setRowCount(int(m_metrics.size()));
    QStringList columns, rows;
    for (int i = 0; i < n; ++i) {
        const QString label = QString::fromStdString(m_plans[i]->label);
        columns << (i == m_reference ? tr("%1\n(reference)").arg(label) : label);
    }
    for (const MetricRow &row : m_metrics)
        rows << metricRowTitle(row);
    m_table->setHorizontalHeaderLabels(columns);
    m_table->setVerticalHeaderLabels(rows);
    for (int r = 0; r < int(m_metrics.size()); ++r)
        m_table->verticalHeaderItem(r)->setToolTip(termTip(QString::fromStdString(m_metrics[size_t(r)].key)));
    for (int r = 0; r < int(m_metrics.size()); ++r) {
        const MetricRow &row = m_metrics[size_t(r)];
        for (int i = 0; i < n; ++i) {
            auto *item = new QTableWidgetItem(metricCellText(row, i, m_reference));
            item->setData(Qt::UserRole, number(row.values[size_t(i)]));
            item->setData(Qt::UserRole + 1, number(row.difference[size_t(i)]));
            item->setData(Qt::UserRole + 2, number(row.ratio[size_t(i)]));
            if (row.best == i) {
                QFont f = item->font();
                f.setBold(true);
                item->setFont(f);
                item->setBackground(kBestBackground);
                item->setForeground(QColor(0x10, 0x10, 0x10));  // readable on green in dark themes
                item->setToolTip(tr("best"));
            }
            m_table->setItem(r, i, item);
        }
    }
    fitTableHeight();
}

void CompareView::fitTableHeight()
{
    m_table->resizeRowsToContents();
    int height = m_table->horizontalHeader()->sizeHint().height() + 2 * m_table->frameWidth();
    for (int r = 0; r < m_table->rowCount(); ++r)
        height += m_table->rowHeight(r);
    // Room for the sideways scroll bar when the plan columns do not fit.
    const int columns = m_table->columnCount() * m_table->horizontalHeader()->minimumSectionSize();
    if (columns + m_table->verticalHeader()->width() + 2 * m_table->frameWidth() > m_table->width())
        height += m_table->horizontalScrollBar()->sizeHint().height();
    m_table->setFixedHeight(height);
}

bool CompareView::exportTo(const QString &fileName, QString *error)
{
    const QString suffix = QFileInfo(fileName).suffix().toLower();
    const bool image = suffix == QLatin1String("png") || suffix == QLatin1String("svg");
    const bool data = suffix == QLatin1String("json") || suffix == QLatin1String("csv");
    if (!image && !data && suffix != QLatin1String("pdf")) {
        *error = tr("%1: unknown export format \"%2\" (use .png, .svg, .pdf, .json or .csv)").arg(fileName, suffix);
        return false;
    }
    if (m_plans.size() < 2) {
        *error = tr("%1: nothing to compare: %2").arg(fileName, m_placeholder->text());
        return false;
    }
    if (image)
        return exportComparisonImage(fileName, m_plans, m_reference, error);
    if (data)
        return exportComparisonData(fileName, m_plans, m_reference, error);
    return writeComparisonReport(fileName, m_plans, m_reference, error);
}

} // namespace nest::ui
