#pragma once
// The plan list dock: every run and pinned plan (PlanListModel) with the actions on them —
// Show (in the plan tabs), Pin, Rename, Duplicate, Delete (each one undo step), Compare
// (the selected plans, or the last pinned ones, in the Compare tab) — and, while "Run
// baselines" works, one progress bar per planner with a Cancel button.
#include <QList>
#include <QWidget>

class QGridLayout;
class QLabel;
class QProgressBar;
class QPushButton;
class QTableView;
class QToolButton;
class QVBoxLayout;

namespace nest::ui {

class BaselineRunner;
class PlanLibrary;
class PlanListModel;

class PlanListView : public QWidget {
    Q_OBJECT
public:
    explicit PlanListView(PlanLibrary *library, QWidget *parent = nullptr);

    PlanLibrary *library() const { return m_library; }
    PlanListModel *model() const { return m_model; }
    QTableView *table() const { return m_table; }
    // Selected rows, ascending.
    QList<int> selectedRows() const;
    void selectRows(const QList<int> &rows);
    // Follows a baseline runner: its progress bars and Cancel button.
    void setBaselineRunner(BaselineRunner *runner);
    QWidget *baselinePanel() const { return m_baselinePanel; }
    QList<QProgressBar *> baselineBars() const { return m_bars; }
    QPushButton *cancelBaselinesButton() const { return m_cancelBaselines; }
    QToolButton *pinButton() const { return m_pin; }
    QToolButton *deleteButton() const { return m_delete; }
    QToolButton *duplicateButton() const { return m_duplicate; }
    QToolButton *renameButton() const { return m_rename; }
    QToolButton *compareButton() const { return m_compare; }

    // The actions on the selection (also the buttons); false when there is nothing to do.
    bool pinSelected();
    bool deleteSelected();
    bool duplicateSelected();
    bool renameSelected();   // starts editing the name in place

signals:
    void showRequested(int row);
    void compareRequested(const QList<int> &rows);
    void selectionChanged();

private:
    QGridLayout *createButtons();
    void createBaselinePanel();
    void connectControls();
    void updateButtons();
    void baselinesStarted(const QStringList &planners);
    void baselinesEnded();

    PlanLibrary *m_library;
    PlanListModel *m_model;
    QTableView *m_table;
    QToolButton *m_show, *m_pin, *m_rename, *m_duplicate, *m_delete, *m_compare;
    QWidget *m_baselinePanel;
    QVBoxLayout *m_barsLayout;
    QList<QProgressBar *> m_bars;
    QLabel *m_baselineLabel;
    QPushButton *m_cancelBaselines;
};

} // namespace nest::ui
