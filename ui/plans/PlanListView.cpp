#include "PlanListView.h"

#include "BaselineRunner.h"
#include "PlanLibrary.h"
#include "PlanListModel.h"

#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

namespace nest::ui {

PlanListView::PlanListView(PlanLibrary *library, QWidget *parent)
    : QWidget(parent)
    , m_library(library)
    , m_model(new PlanListModel(library, this))
    , m_table(new QTableView(this))
{
    setObjectName(QStringLiteral("planListView"));
    m_table->setObjectName(QStringLiteral("planListTable"));
    m_table->setModel(m_model);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_table->setEditTriggers(QAbstractItemView::EditKeyPressed | QAbstractItemView::SelectedClicked);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setWordWrap(false);

    QGridLayout *buttons = createButtons();
    createBaselinePanel();
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(buttons);
    layout->addWidget(m_table, 1);
    layout->addWidget(m_baselinePanel);

    connectControls();
    updateButtons();
}

// Show, Pin, Compare, Rename, Duplicate and Delete.
QGridLayout *PlanListView::createButtons()
{
    auto button = [this](const QString &text, const QString &tip) {
        auto *b = new QToolButton(this);
        b->setText(text);
        b->setToolTip(tip);
        return b;
    };
    m_show = button(tr("Show"), tr("Show the plan in the plan tabs (double-click)"));
    m_pin = button(tr("Pin"), tr("Keep the run: pinned plans are saved in the workspace with their cluster"));
    m_rename = button(tr("Rename"), tr("Rename the plan (F2)"));
    m_duplicate = button(tr("Duplicate"), tr("Pin a copy of the plan"));
    m_delete = button(tr("Delete"), tr("Unpin a pinned plan or delete a run (undoable)"));
    m_compare = button(tr("Compare"), tr("Compare the selected plans (2-4) side by side"));
    // Two rows of three: one row of six would make the dock (and so the window) at least
    // 390 px wider than the canvas can spare on a 1024 px screen.
    auto *buttons = new QGridLayout;
    buttons->setContentsMargins(0, 0, 0, 0);
    int at = 0;
    for (QToolButton *b : {m_show, m_pin, m_compare, m_rename, m_duplicate, m_delete}) {
        b->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
        buttons->addWidget(b, at / 3, at % 3);
        ++at;
    }
    return buttons;
}

// Run Baselines' progress: one bar per planner, and Cancel.
void PlanListView::createBaselinePanel()
{
    m_baselinePanel = new QWidget(this);
    m_baselinePanel->setObjectName(QStringLiteral("baselinePanel"));
    auto *panel = new QVBoxLayout(m_baselinePanel);
    panel->setContentsMargins(0, 4, 0, 0);
    m_baselineLabel = new QLabel(tr("Running the baselines…"), m_baselinePanel);
    m_barsLayout = new QVBoxLayout;
    m_cancelBaselines = new QPushButton(tr("Cancel Baselines"), m_baselinePanel);
    panel->addWidget(m_baselineLabel);
    panel->addLayout(m_barsLayout);
    panel->addWidget(m_cancelBaselines, 0, Qt::AlignLeft);
    m_baselinePanel->hide();
}

void PlanListView::connectControls()
{
    connect(m_show, &QToolButton::clicked, this, [this] {
        const QList<int> rows = selectedRows();
        if (!rows.isEmpty())
            emit showRequested(rows.front());
    });
    connect(m_pin, &QToolButton::clicked, this, &PlanListView::pinSelected);
    connect(m_rename, &QToolButton::clicked, this, &PlanListView::renameSelected);
    connect(m_duplicate, &QToolButton::clicked, this, &PlanListView::duplicateSelected);
    connect(m_delete, &QToolButton::clicked, this, &PlanListView::deleteSelected);
    connect(m_compare, &QToolButton::clicked, this, [this] { emit compareRequested(selectedRows()); });
    connect(m_table, &QTableView::doubleClicked, this, [this](const QModelIndex &index) {
        if (index.column() != PlanListModel::NameColumn)
            emit showRequested(index.row());
    });
    connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
        updateButtons();
        emit selectionChanged();
    });
    connect(m_model, &QAbstractItemModel::modelReset, this, [this] {
        updateButtons();
        m_table->resizeColumnsToContents();
        emit selectionChanged();
    });
}

QList<int> PlanListView::selectedRows() const
{
    QList<int> rows;
    for (const QModelIndex &i : m_table->selectionModel()->selectedRows())
        rows << i.row();
    std::sort(rows.begin(), rows.end());
    return rows;
}

void PlanListView::selectRows(const QList<int> &rows)
{
    QItemSelection selection;
    for (int r : rows)
        if (r >= 0 && r < m_model->rowCount())
            selection.select(m_model->index(r, 0), m_model->index(r, PlanListModel::ColumnCount - 1));
    m_table->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect);
    if (!rows.isEmpty())
        m_table->scrollTo(m_model->index(rows.front(), 0));
}

void PlanListView::updateButtons()
{
    const QList<int> rows = selectedRows();
    const bool one = rows.size() == 1;
    const bool anyRun = std::any_of(rows.begin(), rows.end(), [this](int r) { return !m_library->isPinned(r); });
    m_show->setEnabled(one);
    m_pin->setEnabled(anyRun);
    m_rename->setEnabled(one);
    m_duplicate->setEnabled(one);
    m_delete->setEnabled(!rows.isEmpty());
    m_compare->setEnabled(m_library->rowCount() >= 2);
}

bool PlanListView::pinSelected()
{
    const QList<int> rows = selectedRows();
    // Runs by id: pinning one moves the rows below it.
    QList<quint64> ids;
    for (int r : rows)
        if (quint64 id = m_library->runIdAt(r))
            ids << id;
    bool any = false;
    for (quint64 id : ids)
        any |= m_library->pin(m_library->rowOfRun(id));
    return any;
}

bool PlanListView::deleteSelected()
{
    QList<int> rows = selectedRows();
    // From the bottom up, so that the rows above keep their numbers.
    bool any = false;
    for (auto it = rows.crbegin(); it != rows.crend(); ++it)
        any |= m_library->remove(*it);
    return any;
}

bool PlanListView::duplicateSelected()
{
    const QList<int> rows = selectedRows();
    return rows.size() == 1 && m_library->duplicate(rows.front());
}

bool PlanListView::renameSelected()
{
    const QList<int> rows = selectedRows();
    if (rows.size() != 1)
        return false;
    const QModelIndex index = m_model->index(rows.front(), PlanListModel::NameColumn);
    m_table->setCurrentIndex(index);
    m_table->edit(index);
    return true;
}

void PlanListView::setBaselineRunner(BaselineRunner *runner)
{
    connect(runner, &BaselineRunner::started, this, &PlanListView::baselinesStarted);
    connect(runner, &BaselineRunner::progress, this, [this](int index, double fraction, double best) {
        if (index < 0 || index >= m_bars.size())
            return;
        QProgressBar *bar = m_bars[index];
        bar->setValue(qRound(1000 * fraction));
        const QString name = bar->property("planner").toString();
        bar->setFormat(best > 0 ? tr("%1: %p% — best %2 s").arg(name).arg(best, 0, 'f', 3) : tr("%1: %p%").arg(name));
    });
    connect(runner, &BaselineRunner::finished, this, &PlanListView::baselinesEnded);
    connect(runner, &BaselineRunner::failed, this, &PlanListView::baselinesEnded);
    connect(runner, &BaselineRunner::cancelled, this, &PlanListView::baselinesEnded);
    connect(m_cancelBaselines, &QPushButton::clicked, runner, &BaselineRunner::cancel);
}

void PlanListView::baselinesStarted(const QStringList &planners)
{
    qDeleteAll(m_bars);
    m_bars.clear();
    for (const QString &p : planners) {
        auto *bar = new QProgressBar(m_baselinePanel);
        bar->setObjectName(QStringLiteral("baselineBar_") + p);
        bar->setProperty("planner", p);
        bar->setRange(0, 1000);
        bar->setValue(0);
        bar->setFormat(tr("%1: %p%").arg(p));
        m_barsLayout->addWidget(bar);
        m_bars << bar;
    }
    m_baselinePanel->show();
}

void PlanListView::baselinesEnded()
{
    m_baselinePanel->hide();
}

} // namespace nest::ui
