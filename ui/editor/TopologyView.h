#pragma once
// The topology canvas view: zoom under the mouse (wheel, Ctrl+= / Ctrl+-) within a clamped
// range, fit to view (Ctrl+0 / F) and to the selection, rubber-band selection, panning with
// the middle mouse button or Space+drag, and a legend of the levels' link colours. Over a
// read-only scene the left button pans (nothing to select or drag). The legend follows every
// edit (it is repainted when the cluster changes). The view tells the scene its aspect ratio,
// so that wide trees are laid out to fill it. Right-click opens a context menu for the item
// under the mouse (contextMenuAt builds it, for tests without a popup).
#include <QGraphicsView>

#include <memory>

class QMenu;

namespace nest::ui {

class TopologyScene;

class TopologyView : public QGraphicsView {
    Q_OBJECT
public:
    explicit TopologyView(TopologyScene *scene, QWidget *parent = nullptr);

    static constexpr double kMinZoom = 0.01;
    static constexpr double kMaxZoom = 6.0;
    double zoom() const;
    void setZoom(double zoom);
    // The legend of the levels' links, in viewport coordinates (empty without levels).
    QRect legendRect() const;
    // The legend's text lines: one per level ("L1 rack  50 GB/s"), then the override note.
    QStringList legendLines() const;
    // The context menu for a scene point: on a node Duplicate, Delete, Move to rack ▸; on a
    // rack Add Node, Duplicate, Delete; on a higher group Add Rack, Delete; elsewhere Add Rack,
    // Fit. Over a read-only scene only Fit.
    std::unique_ptr<QMenu> contextMenuAt(const QPointF &scenePos);

public slots:
    void zoomIn();
    void zoomOut();
    void fitToView();
    void fitSelection();

signals:
    void zoomChanged(double zoom);

protected:
    void wheelEvent(QWheelEvent *event) override;
    void keyPressEvent(QKeyEvent *event) override;
    void keyReleaseEvent(QKeyEvent *event) override;
    void mousePressEvent(QMouseEvent *event) override;
    void mouseMoveEvent(QMouseEvent *event) override;
    void mouseReleaseEvent(QMouseEvent *event) override;
    void drawForeground(QPainter *painter, const QRectF &rect) override;
    void resizeEvent(QResizeEvent *event) override;
    void contextMenuEvent(QContextMenuEvent *event) override;

private:
    void scaleBy(double factor);
    // Fits `rect` (scene coordinates) into the viewport, clear of the legend.
    void fitRect(const QRectF &rect);
    QFont legendFont() const;
    bool hasOverrides() const;

    // Refits after anything that reshapes the diagram (Import Topology, Add Rack, a resize)
    // while the user has not zoomed since the last fit (issue 49: the canvas kept its old
    // zoom and the legend covered the spine).
    void refitLater();

    TopologyScene *m_scene;
    bool m_autoFit = true;   // the view shows a fit; false once the user zooms
    bool m_refitQueued = false;
    bool m_spaceHeld = false;
    bool m_panning = false;
    QPoint m_panLast;
};

} // namespace nest::ui
