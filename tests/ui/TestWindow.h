#pragma once
// The main window as the window-level suites drive it: its own settings file, autosave off,
// "Discard" for unsaved changes, warnings logged instead of shown in a dialog.
#include "MainWindow.h"
#include "PlanSession.h"
#include "Settings.h"
#include "UiTestSupport.h"

#include <QString>

#include <memory>

namespace uitest {

inline std::unique_ptr<nest::ui::MainWindow> testWindow(const QString &settingsFile)
{
    using namespace nest::ui;
    auto w = std::make_unique<MainWindow>(nullptr, std::make_unique<Settings>(settingsFile));
    w->settings().setAutosaveIntervalSeconds(0);
    Prompts answers;
    answers.unsavedChanges = [](const QString &) { return UnsavedChoice::Discard; };
    answers.warning = [](const QString &, const QString &message) { qWarning("%s", qPrintable(message)); };
    w->setPrompts(answers);
    return w;
}

// Opens the quick-start sample; the evaluation of its pinned plan is cancelled so that it
// is not in the way of the test's own runs.
inline void openQuickstart(nest::ui::MainWindow &w)
{
    QString error;
    if (!w.openSample(kQuickstart, &error))
        qWarning("%s", qPrintable(error));
    w.planning()->cancel();
}

} // namespace uitest
