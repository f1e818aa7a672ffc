#pragma once
// Plan > Sweep Cluster Parameter…: which tier and link field to vary (core's
// sweepParameters, each with its current value), the range in display units (GB/s, us, or
// a ratio), the number of points, linear or geometric spacing, and the planners to run at
// every point. Defaults when a parameter is picked: oversubscription current .. 4x current
// in 4 steps (1, 2, 3, 4 for a 1:1 spine); bandwidth 25 % .. 200 % of current in 5 steps;
// latency 50 % .. 400 % in 4 steps. Invalid input (to <= from, steps outside 2..50, a value
// the cluster refuses, no planner) shows its reason and disables OK.
#include "ClusterSweep.h"

#include <QDialog>
#include <QVariantMap>

#include <map>

class QCheckBox;
class QComboBox;
class QDialogButtonBox;
class QDoubleSpinBox;
class QLabel;
class QSpinBox;

namespace nest::ui {

class SweepDialog : public QDialog {
    Q_OBJECT
public:
    explicit SweepDialog(const Topology &cluster, QWidget *parent = nullptr);

    // The sweep as chosen (values in Topology units). Meaningful when isValid().
    SweepRequest request() const;
    bool isValid() const { return m_problem.isEmpty(); }
    // Why the input is invalid (empty when valid); shown in messageLabel().
    QString validationMessage() const { return m_problem; }

    // The parameter's label as the GUI writes it ("node latency (µs)").
    static QString parameterText(const SweepParameter &p, const Topology &cluster);

    // Picks the parameter (and applies its defaults); false when the cluster has none such.
    bool selectParameter(const SweepParameter &p);
    // What the dialog was last set to ("level", "field", "from", "to", "steps", "geometric",
    // "planners"), for Settings to remember; restoreState applies what fits this cluster
    // (an unknown parameter keeps the defaults, values are validated as if typed).
    QVariantMap state() const;
    void restoreState(const QVariantMap &state);

    // For tests.
    QComboBox *parameterCombo() const { return m_parameter; }
    QDoubleSpinBox *fromBox() const { return m_from; }
    QDoubleSpinBox *toBox() const { return m_to; }
    QSpinBox *stepsBox() const { return m_steps; }
    QCheckBox *geometricBox() const { return m_geometric; }
    QCheckBox *plannerBox(const std::string &name) const;
    QLabel *messageLabel() const { return m_message; }
    QDialogButtonBox *buttons() const { return m_buttons; }

public slots:
    void accept() override;

private:
    void applyDefaults();
    void validate();
    SweepParameter currentParameter() const;

    const Topology m_cluster;
    std::vector<std::pair<SweepParameter, double>> m_parameters;
    QComboBox *m_parameter;
    QDoubleSpinBox *m_from;
    QDoubleSpinBox *m_to;
    QSpinBox *m_steps;
    QCheckBox *m_geometric;
    std::map<std::string, QCheckBox *> m_planners;
    QLabel *m_message;
    QDialogButtonBox *m_buttons;
    QString m_problem;
};

} // namespace nest::ui
