#pragma once
// New cluster from a template: pick a template (fat-tree, spine-leaf, SuperPOD-like, torus,
// the paper's clusters) or a named preset (core clusterPresets(): paper-spineleaf-1024,
// superpod-h100-1024, ...), set its size parameters (spin boxes from TemplateParam ranges)
// and a device type; core's makeCluster builds the topology.
#include "Result.h"
#include "Topology.h"

#include <QDialog>

#include <map>
#include <string>
#include <vector>

class QComboBox;
class QFormLayout;
class QLabel;
class QAbstractSpinBox;

namespace nest::ui {

class TemplateDialog : public QDialog {
    Q_OBJECT
public:
    explicit TemplateDialog(QWidget *parent = nullptr);

    // Selects a preset: its template, device and parameters; false when unknown.
    bool setPreset(const QString &key);
    QString presetKey() const;   // "" = custom (not a preset, or edited since)
    void setTemplate(const QString &key);
    // Sets a parameter's spin box (tests); false when the template has no such parameter.
    bool setParam(const QString &key, double value);
    void setDevice(const QString &device);   // "" = the template's default
    std::string templateKey() const;
    std::map<std::string, double> params() const;
    std::string device() const;
    // The cluster for the current choices, or the reason it cannot be built.
    Result<Topology> cluster() const;

private:
    void rebuildForm();
    void updatePreview();
    void accept() override;

    void presetChosen();
    void markCustom();

    QComboBox *m_preset;
    bool m_applyingPreset = false;
    QComboBox *m_template;
    QComboBox *m_device;
    QLabel *m_description;
    QFormLayout *m_form;
    QLabel *m_preview;
    std::vector<std::pair<std::string, QAbstractSpinBox *>> m_spins;
};

} // namespace nest::ui
