#pragma once
// The Placement view: the topology canvas of the document's cluster, read-only, with every
// device coloured by the stage (or replica) the plan puts on it, a tooltip per device from
// the plan's Report, and a legend. The colouring (PlacementOverlay) lives in the scene, so
// it survives every rebuild; after a cluster edit it is recomputed and turns stale when the
// plan no longer fits the cluster (colours kept for the devices that still exist, hatched,
// with a banner). Zoomed out, node boxes show one colour band per stage/replica.
#include "PlacementOverlay.h"
#include "PlanSnapshot.h"

#include <QColor>
#include <QStringList>
#include <QWidget>

#include <memory>

class QComboBox;
class QHBoxLayout;
class QLabel;
class QListWidget;
class QPainter;
class QStackedWidget;

namespace nest::ui {

class WorkspaceDocument;
class TopologyScene;
class TopologyView;

class PlacementView : public QWidget {
    Q_OBJECT
public:
    enum ColourBy { ByStage, ByReplica };

    explicit PlacementView(WorkspaceDocument *document, QWidget *parent = nullptr);
    ~PlacementView() override;

    // null = no plan: a placeholder text instead of the canvas.
    void setSnapshot(PlanSnapshotPtr snapshot);
    PlanSnapshotPtr snapshot() const { return m_snapshot; }
    // Stale from outside (the model changed, say); the view is also stale while the plan
    // does not fit the document's cluster, whatever this says.
    void setStale(bool stale);
    bool isStale() const;
    // .png/.svg/.pdf: the coloured diagram with the title "Placement — <plan label>" and the
    // legend. False + *error ("FILE: reason") on failure or without a plan.
    bool exportTo(const QString &fileName, QString *error);

    void setColourBy(ColourBy by);
    ColourBy colourBy() const { return m_by; }

    TopologyScene *scene() const { return m_scene; }
    TopologyView *view() const { return m_view; }
    const PlacementOverlay *overlay() const { return m_overlay.get(); }
    QString deviceToolTip(int device) const;
    QColor deviceColour(int device) const;   // invalid for unused devices (and without plan)
    QStringList legendEntries() const;       // "stage 0 (layers 0-7)", ... / "replica 0", ...

    QComboBox *colourByCombo() const { return m_colourBy; }
    QLabel *banner() const { return m_banner; }
    QLabel *placeholder() const { return m_placeholder; }
    QLabel *planLabel() const { return m_planLabel; }
    QListWidget *legendList() const { return m_legend; }

protected:
    void showEvent(QShowEvent *event) override;
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    QHBoxLayout *createToolbar();
    void createLegend();
    // Recomputes the overlay from the snapshot and the document's cluster and shows it.
    void refresh();
    void updateLegend();
    // As high as the legend's rows at the current width, at most four rows (then it scrolls).
    void fitLegendHeight();
    QString titleText() const;
    QString subtitleText() const;
    // Export: the legend's entries (with "unused" last) laid out in rows of `width`.
    struct LegendCell {
        QColor colour;
        QString text;
        QRectF rect;
    };
    std::vector<LegendCell> legendCells(double width) const;
    void paintExport(QPainter *painter, const QSizeF &size) const;

    WorkspaceDocument *m_document;
    TopologyScene *m_scene = nullptr;   // child QObject
    TopologyView *m_view = nullptr;
    QComboBox *m_colourBy = nullptr;
    QLabel *m_planLabel = nullptr;
    QLabel *m_banner = nullptr;
    QLabel *m_placeholder = nullptr;
    QStackedWidget *m_stack = nullptr;
    QListWidget *m_legend = nullptr;
    QLabel *m_key = nullptr;

    PlanSnapshotPtr m_snapshot;
    std::shared_ptr<const PlacementOverlay> m_overlay;
    bool m_forcedStale = false;
    // The diagram last fitted to (invalid: none yet). Fitted once the canvas has a size and a
    // plan; again when the diagram changes (another cluster), else the user's zoom stays.
    QRectF m_fittedRect;
    bool needsFit() const;
    void fitToDiagram();     // now, and remembers what
    ColourBy m_by = ByStage;
};

} // namespace nest::ui
