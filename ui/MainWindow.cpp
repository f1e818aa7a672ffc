#include "MainWindow.h"

#include <QStatusBar>

namespace nest::ui {

MainWindow::MainWindow(QWidget *parent)
    : QMainWindow(parent)
{
    setWindowTitle(tr("NEST Planner"));
    statusBar()->showMessage(tr("Ready"));
    resize(1280, 800);
}

} // namespace nest::ui
