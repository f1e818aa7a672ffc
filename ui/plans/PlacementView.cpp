#include "PlacementView.h"

#include "WindowWording.h"

#include "WorkspaceDocument.h"
#include "DiagramExport.h"
#include "TopologyScene.h"
#include "TopologyView.h"

#include <QComboBox>
#include <QEvent>
#include <QFontMetricsF>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPainter>
#include <QPixmap>
#include <QScrollBar>
#include <QStackedWidget>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

namespace nest::ui {

namespace {

constexpr double kPlacementMargin = 24;
constexpr double kPlacementLegendRow = 20;
constexpr double kPlacementSwatch = 12;

QFont pixelFont(int pixels, bool bold = false)
{
    QFont f;
    f.setPixelSize(pixels);
    f.setBold(bold);
    return f;
}

QIcon swatch(const QColor &colour, const QColor &outline)
{
    QPixmap pixmap(14, 14);
    pixmap.fill(Qt::transparent);
    QPainter p(&pixmap);
    p.setPen(QPen(outline, 1.5));
    p.setBrush(colour);
    p.drawRect(QRectF(0.75, 0.75, 12.5, 12.5));
    return QIcon(pixmap);
}

} // namespace

PlacementView::PlacementView(WorkspaceDocument *document, QWidget *parent)
    : QWidget(parent)
    , m_document(document)
{
    setObjectName(QStringLiteral("placementView"));
    m_scene = new TopologyScene(document, this);
    m_scene->setObjectName(QStringLiteral("placementScene"));
    m_scene->setReadOnly(true);
    m_view = new TopologyView(m_scene);
    m_view->setObjectName(QStringLiteral("placementCanvas"));
    QHBoxLayout *toolbar = createToolbar();

    m_banner = new QLabel;
    m_banner->setObjectName(QStringLiteral("placementStaleBanner"));
    m_banner->setWordWrap(true);
    m_banner->setStyleSheet(QStringLiteral("QLabel { background: #fff3cd; color: #6b4e00; "
                                           "border: 1px solid #e6c35c; padding: 4px 8px; }"));
    m_banner->hide();

    m_placeholder = new QLabel(tr("No plan yet: press Run (Ctrl+R)"));
    m_placeholder->setObjectName(QStringLiteral("placementPlaceholder"));
    m_placeholder->setAlignment(Qt::AlignCenter);
    m_stack = new QStackedWidget;
    m_stack->addWidget(m_placeholder);
    m_stack->addWidget(m_view);

    createLegend();

    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 4);
    layout->setSpacing(4);
    layout->addLayout(toolbar);
    layout->addWidget(m_banner);
    layout->addWidget(m_stack, 1);
    layout->addWidget(m_legend);
    layout->addWidget(m_key);

    // After the scene's own rebuild (connected first, in its constructor).
    connect(document, &WorkspaceDocument::clusterChanged, this, &PlacementView::refresh);
    refresh();
}

// "Colour by", the plan's one-line summary and Fit.
QHBoxLayout *PlacementView::createToolbar()
{
    m_colourBy = new QComboBox;
    m_colourBy->setObjectName(QStringLiteral("placementColourBy"));
    m_colourBy->addItem(tr("Stage"), ByStage);
    m_colourBy->addItem(tr("Replica"), ByReplica);
    connect(m_colourBy, &QComboBox::currentIndexChanged, this, [this](int index) {
        setColourBy(index == 1 ? ByReplica : ByStage);
    });
    m_planLabel = new QLabel;
    m_planLabel->setObjectName(QStringLiteral("placementPlanLabel"));
    // Wraps rather than widening the tab (and the window) to the plan's one-line summary.
    m_planLabel->setWordWrap(true);
    auto *fit = new QToolButton;
    fit->setText(tr("Fit"));
    fit->setToolTip(tr("Fit the whole cluster into the view (Ctrl+0)"));
    connect(fit, &QToolButton::clicked, m_view, &TopologyView::fitToView);

    auto *toolbar = new QHBoxLayout;
    toolbar->setContentsMargins(6, 4, 6, 0);
    toolbar->addWidget(new QLabel(tr("Colour by:")));
    toolbar->addWidget(m_colourBy);
    toolbar->addSpacing(12);
    toolbar->addWidget(m_planLabel, 1);
    toolbar->addWidget(fit);

    return toolbar;
}

// The legend (one entry per stage or replica) and the key to the colours.
void PlacementView::createLegend()
{
    // Many stages or replicas: the entries wrap into rows and scroll past four of them.
    m_legend = new QListWidget;
    m_legend->setObjectName(QStringLiteral("placementLegend"));
    m_legend->setViewMode(QListView::ListMode);
    m_legend->setFlow(QListView::LeftToRight);
    m_legend->setWrapping(true);
    m_legend->setResizeMode(QListView::Adjust);
    m_legend->setSpacing(2);
    m_legend->setSelectionMode(QAbstractItemView::NoSelection);
    m_legend->setFocusPolicy(Qt::NoFocus);
    m_legend->setFrameShape(QFrame::NoFrame);
    m_legend->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_legend->setVerticalScrollMode(QAbstractItemView::ScrollPerPixel);
    m_legend->installEventFilter(this);
    m_legend->hide();
    m_key = new QLabel(tr("Grey: device unused by the plan · red outline: over memory capacity · "
                          "zoomed out, each node shows one band per stage or replica"));
    m_key->setObjectName(QStringLiteral("placementKey"));
    m_key->setWordWrap(true);
    m_key->setStyleSheet(QStringLiteral("QLabel { color: #6b7785; }"));
    m_key->hide();
}

PlacementView::~PlacementView()
{
    // The view paints from the scene: let it go first.
    delete m_view;
    m_view = nullptr;
}

void PlacementView::setSnapshot(PlanSnapshotPtr snapshot)
{
    m_snapshot = std::move(snapshot);
    refresh();
    // Another cluster's diagram (a new document, a template, a cluster grown to thousands of
    // devices): the zoom of the last one would show a corner of it. Refit; the user's zoom
    // stays while the diagram is the same.
    if (needsFit() && m_snapshot && m_view->isVisible())
        fitToDiagram();
}

bool PlacementView::needsFit() const
{
    return !m_fittedRect.isValid() || m_fittedRect.size() != m_scene->diagramRect().size();
}

void PlacementView::fitToDiagram()
{
    m_view->fitToView();
    m_fittedRect = m_scene->diagramRect();
}

void PlacementView::showEvent(QShowEvent *event)
{
    QWidget::showEvent(event);
    if (needsFit() && m_snapshot)
        QTimer::singleShot(0, this, [this] { fitToDiagram(); });
}

void PlacementView::setStale(bool stale)
{
    if (m_forcedStale == stale)
        return;
    m_forcedStale = stale;
    refresh();
}

bool PlacementView::isStale() const
{
    return m_overlay && m_overlay->isStale();
}

void PlacementView::setColourBy(ColourBy by)
{
    if (m_colourBy->currentIndex() != (by == ByReplica ? 1 : 0))
        m_colourBy->setCurrentIndex(by == ByReplica ? 1 : 0);   // comes back here
    if (m_by == by)
        return;
    m_by = by;
    refresh();
}

void PlacementView::refresh()
{
    const auto by = m_by == ByStage ? PlacementOverlay::ColourBy::Stage : PlacementOverlay::ColourBy::Replica;
    m_overlay = m_snapshot ? std::make_shared<const PlacementOverlay>(m_snapshot, m_document->topology(), by,
                                                                      m_forcedStale)
                           : nullptr;
    m_scene->setOverlay(m_overlay);
    m_stack->setCurrentWidget(m_snapshot ? static_cast<QWidget *>(m_view) : m_placeholder);
    m_banner->setText(m_overlay ? m_overlay->bannerText() : QString());
    m_banner->setVisible(isStale());
    m_planLabel->setText(m_snapshot ? subtitleText() : QString());
    updateLegend();
}

void PlacementView::updateLegend()
{
    m_legend->clear();
    m_legend->setVisible(m_overlay != nullptr);
    m_key->setVisible(m_overlay != nullptr);
    if (!m_overlay)
        return;
    for (const PlacementOverlay::LegendEntry &entry : m_overlay->legend())
        m_legend->addItem(new QListWidgetItem(swatch(entry.colour, entry.colour.darker(140)), entry.text));
    m_legend->addItem(new QListWidgetItem(swatch(PlacementOverlay::unusedColour(), QColor(0x9a, 0xa3, 0xad)),
                                          tr("unused")));
    fitLegendHeight();
}

void PlacementView::fitLegendHeight()
{
    const int count = m_legend->count();
    if (count == 0)
        return;
    // Ask the list where it put its last entry (scrolling by pixels, so the offset is too).
    m_legend->doItemsLayout();
    const QRect last = m_legend->visualItemRect(m_legend->item(count - 1));
    const int rowHeight = last.height() + 2 * m_legend->spacing();
    const int content = last.bottom() + 1 + m_legend->verticalScrollBar()->value() + m_legend->spacing();
    const int height = std::min(content, 4 * rowHeight) + 2 * m_legend->frameWidth();
    if (height != m_legend->height())
        m_legend->setFixedHeight(height);
}

bool PlacementView::eventFilter(QObject *watched, QEvent *event)
{
    // After the list has laid out its viewport for the new size.
    if (watched == m_legend && event->type() == QEvent::Resize)
        QMetaObject::invokeMethod(this, &PlacementView::fitLegendHeight, Qt::QueuedConnection);
    return QWidget::eventFilter(watched, event);
}

QString PlacementView::deviceToolTip(int device) const
{
    return m_overlay ? m_overlay->deviceToolTip(device) : QString();
}

QColor PlacementView::deviceColour(int device) const
{
    return m_overlay ? m_overlay->deviceColour(device) : QColor();
}

QStringList PlacementView::legendEntries() const
{
    QStringList out;
    if (m_overlay)
        for (const PlacementOverlay::LegendEntry &entry : m_overlay->legend())
            out << entry.text;
    return out;
}

QString PlacementView::titleText() const
{
    return tr("Placement — %1").arg(QString::fromStdString(m_snapshot->label));
}

QString PlacementView::subtitleText() const
{
    const Plan &plan = m_snapshot->plan();
    QString text = tr("%1 × %2 on %3 of %4 devices · coloured by %5")
                       .arg(counted(plan.pipelineDepth(), tr("stage"), tr("stages")))
                       .arg(counted(plan.dp, tr("replica"), tr("replicas")))
                       .arg(m_snapshot->report().devicesUsed)
                       .arg(m_snapshot->topology.deviceCount())   // the cluster it was planned on
                       .arg(m_by == ByStage ? tr("stage") : tr("replica"));
    if (!m_snapshot->planner.empty())
        text = QString::fromStdString(m_snapshot->planner) + QStringLiteral(" · ") + text;
    // The precision it runs in, and the NVLink domains the colours fall into.
    text += QStringLiteral(" · ") + QString::fromStdString(precisionLabel(plan.precision));
    const Topology &topo = m_snapshot->topology;
    if (const int level = topo.nvlinkDomainLevel(); level >= 0) {
        const std::vector<int> domains = topo.groupsAtLevel(level);
        if (!domains.empty())
            text += tr(" · NVLink domains: %1 of %2 (%3)")
                        .arg(domains.size())
                        .arg(topo.deviceCountUnder(domains.front()))
                        .arg(QString::fromStdString(topo.levels[static_cast<size_t>(level)].name));
    }
    return text;
}

std::vector<PlacementView::LegendCell> PlacementView::legendCells(double width) const
{
    std::vector<LegendCell> cells;
    for (const PlacementOverlay::LegendEntry &entry : m_overlay->legend())
        cells.push_back({entry.colour, entry.text, {}});
    cells.push_back({PlacementOverlay::unusedColour(), tr("unused"), {}});
    const QFontMetricsF fm(pixelFont(12));
    double x = 0, y = 0;
    for (LegendCell &cell : cells) {
        const double w = kPlacementSwatch + 6 + fm.horizontalAdvance(cell.text) + 18;
        if (x > 0 && x + w > width) {
            x = 0;
            y += kPlacementLegendRow;
        }
        cell.rect = QRectF(x, y, w, kPlacementLegendRow);
        x += w;
    }
    return cells;
}

void PlacementView::paintExport(QPainter *p, const QSizeF &size) const
{
    const QRectF diagram = m_scene->diagramRect();
    const double inner = size.width() - 2 * kPlacementMargin;
    p->fillRect(QRectF(QPointF(0, 0), size), Qt::white);
    p->setPen(QColor(0x22, 0x2b, 0x36));
    p->setFont(pixelFont(20, true));
    p->drawText(QRectF(kPlacementMargin, kPlacementMargin, inner, 28), Qt::AlignLeft | Qt::AlignVCenter, titleText());
    QString subtitle = subtitleText();
    if (m_overlay->isStale())
        subtitle += QStringLiteral(" · ") + m_overlay->bannerText();
    p->setFont(pixelFont(13));
    p->setPen(QColor(0x6b, 0x77, 0x85));
    p->drawText(QRectF(kPlacementMargin, kPlacementMargin + 30, inner, 20), Qt::AlignLeft | Qt::AlignVCenter, subtitle);

    const double top = kPlacementMargin + 60;
    const QRectF target(kPlacementMargin + (inner - diagram.width()) / 2, top, diagram.width(), diagram.height());
    m_scene->renderDiagram(p, target);

    const QPointF origin(kPlacementMargin, target.bottom() + 14);
    p->setFont(pixelFont(12));
    for (const LegendCell &cell : legendCells(inner)) {
        const QRectF r = cell.rect.translated(origin);
        const QRectF box(r.left(), r.center().y() - kPlacementSwatch / 2, kPlacementSwatch, kPlacementSwatch);
        p->setPen(QPen(cell.colour.darker(140), 1));
        p->setBrush(cell.colour);
        p->drawRect(box);
        p->setPen(QColor(0x22, 0x2b, 0x36));
        p->drawText(QRectF(box.right() + 6, r.top(), r.width() - kPlacementSwatch - 6, r.height()),
                    Qt::AlignLeft | Qt::AlignVCenter, cell.text);
    }
}

bool PlacementView::exportTo(const QString &fileName, QString *error)
{
    if (!m_overlay) {
        *error = tr("%1: no plan to export yet").arg(fileName);
        return false;
    }
    const QRectF diagram = m_scene->diagramRect();
    const double inner = std::max(diagram.width(), 560.0);
    const std::vector<LegendCell> cells = legendCells(inner);
    const double legendHeight = cells.empty() ? 0 : cells.back().rect.bottom();
    const QSizeF size(inner + 2 * kPlacementMargin, kPlacementMargin + 60 + diagram.height() + 14 + legendHeight + kPlacementMargin);
    return exportPainting(fileName, size, titleText(), [&](QPainter *painter) {
        paintExport(painter, size);
    }, error);
}

} // namespace nest::ui
