#include "WelcomePage.h"

#include <QFileInfo>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

namespace nest::ui {

WelcomePage::WelcomePage(QWidget *parent)
    : QWidget(parent)
{
    setObjectName(QStringLiteral("welcomePage"));
    auto *outer = new QVBoxLayout(this);
    outer->addStretch(1);
    auto *column = new QVBoxLayout;
    auto *title = new QLabel(tr("<h2>No cluster yet</h2>"
                                "<p>Start from a template (fat-tree, spine-leaf, SuperPOD, torus, the NEST "
                                "paper's clusters), open a workspace, cluster or plan file, or try the sample "
                                "workspace.</p>"));
    title->setWordWrap(true);
    column->addWidget(title);
    m_new = new QPushButton(tr("New from Template…"));
    m_open = new QPushButton(tr("Open…"));
    m_sample = new QPushButton(tr("Open the Sample Workspace"));
    for (QPushButton *b : {m_new, m_open, m_sample})
        column->addWidget(b);
    column->addWidget(new QLabel(tr("Recent files")));
    m_recent = new QListWidget;
    m_recent->setMaximumHeight(180);
    column->addWidget(m_recent);
    auto *row = new QHBoxLayout;
    row->addStretch(1);
    row->addLayout(column, 2);
    row->addStretch(1);
    outer->addLayout(row);
    outer->addStretch(2);

    connect(m_new, &QPushButton::clicked, this, &WelcomePage::newRequested);
    connect(m_open, &QPushButton::clicked, this, &WelcomePage::openRequested);
    connect(m_sample, &QPushButton::clicked, this, &WelcomePage::sampleRequested);
    connect(m_recent, &QListWidget::itemActivated, this,
            [this](QListWidgetItem *item) { emit recentRequested(item->data(Qt::UserRole).toString()); });
}

void WelcomePage::setRecentFiles(const QStringList &files)
{
    m_recent->clear();
    for (const QString &f : files) {
        auto *item = new QListWidgetItem(QFileInfo(f).fileName(), m_recent);
        item->setData(Qt::UserRole, f);
        item->setToolTip(f);
    }
    if (files.isEmpty())
        new QListWidgetItem(tr("(none)"), m_recent);
    m_recent->setEnabled(!files.isEmpty());
}

} // namespace nest::ui
