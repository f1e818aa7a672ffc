#pragma once
// The topology canvas view: zoom under the mouse (wheel, Ctrl+= / Ctrl+-) within a clamped
// range, fit to view (Ctrl+0 / F) and to the selection, rubber-band selection, panning with
// the middle mouse button or Space+drag, and a legend of the levels' link colours. Over a
// read-only scene the left button pans (nothing to select or drag).
#include <QGraphicsView>

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

private:
    void scaleBy(double factor);
    // Fits `rect` (scene coordinates) into the viewport, clear of the legend.
    void fitRect(const QRectF &rect);
    QFont legendFont() const;
    QStringList legendLines() const;

    TopologyScene *m_scene;
    bool m_spaceHeld = false;
    bool m_panning = false;
    QPoint m_panLast;
};

} // namespace nest::ui
