#pragma once
#include <QMainWindow>

namespace nest::ui {

// Placeholder main window; the editor replaces it.
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget *parent = nullptr);
};

} // namespace nest::ui
