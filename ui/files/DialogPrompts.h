#pragma once
// The window's questions as modal dialogs (QMessageBox, QFileDialog): the default Prompts
// (SavePolicy.h) of MainWindow. Tests replace them with answers.
#include "SavePolicy.h"

class QWidget;

namespace nest::ui {

class Settings;

// `parent` owns the dialogs; `settings` (for the last directory) must outlive the prompts.
Prompts dialogPrompts(QWidget *parent, const Settings &settings);

} // namespace nest::ui
