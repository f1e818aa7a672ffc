#pragma once
// What the Topology tab shows while the document has no cluster (a fresh window, or one
// whose file could not be opened): how to get one — New from Template, Open, the sample
// workspace — and the recent files. The window connects the signals to its actions.
#include <QWidget>

class QListWidget;
class QPushButton;

namespace nest::ui {

class WelcomePage : public QWidget {
    Q_OBJECT
public:
    explicit WelcomePage(QWidget *parent = nullptr);

    // The recent files to offer (missing ones are left out by Settings already).
    void setRecentFiles(const QStringList &files);
    QListWidget *recentList() const { return m_recent; }
    QPushButton *newButton() const { return m_new; }
    QPushButton *openButton() const { return m_open; }
    QPushButton *sampleButton() const { return m_sample; }

signals:
    void newRequested();
    void openRequested();
    void sampleRequested();
    void recentRequested(const QString &file);

private:
    QPushButton *m_new, *m_open, *m_sample;
    QListWidget *m_recent;
};

} // namespace nest::ui
