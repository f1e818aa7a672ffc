#pragma once
// The property editor of the cluster dock: the cluster's name and per-level link
// parameters (bandwidth, latency, oversubscription), and the selected group's name, link
// override (switch groups) or device count and type (nodes). Every edit becomes an undo
// command through WorkspaceDocument; the form refreshes from the document's signals.
// Widgets have object names (levelBandwidth0, deviceCount, ...) for tests.
#include <QWidget>

#include <vector>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QSpinBox;
class QGridLayout;

namespace nest {
class Topology;
}

namespace nest::ui {

class WorkspaceDocument;

class PropertyEditor : public QWidget {
    Q_OBJECT
public:
    explicit PropertyEditor(WorkspaceDocument *document, QWidget *parent = nullptr);

    // The group the selection part shows (-1: none).
    int currentGroup() const { return m_group; }

private:
    struct LevelRow {
        QLineEdit *name;
        QDoubleSpinBox *bandwidth;
        QDoubleSpinBox *latency;
        QDoubleSpinBox *oversubscription;
    };
    QWidget *createClusterBox();
    QWidget *createLinkPart();
    QWidget *createDevicePart();
    void rebuildLevels();
    void refresh();
    void refreshCluster(const Topology &t);
    void refreshGroup(const Topology &t, int selected);
    void commitLevel(int level);
    void commitOverride();
    void commitDevices();
    void commitGroupName();

    WorkspaceDocument *m_document;
    int m_group = -1;
    bool m_updating = false;

    QLineEdit *m_clusterName;
    QLabel *m_clusterSummary;
    QGridLayout *m_levelGrid;
    std::vector<LevelRow> m_levels;

    QGroupBox *m_selectionBox;
    QLabel *m_groupKind;
    QLineEdit *m_groupName;
    QWidget *m_linkPart;
    QCheckBox *m_override;
    QDoubleSpinBox *m_overrideBandwidth;
    QDoubleSpinBox *m_overrideLatency;
    QDoubleSpinBox *m_overrideOversubscription;
    QWidget *m_devicePart;
    QSpinBox *m_deviceCount;
    QComboBox *m_deviceType;
};

} // namespace nest::ui
