#include "DialogPrompts.h"

#include "Settings.h"

#include <QDateTime>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QListWidget>
#include <QLocale>
#include <QMessageBox>
#include <QPushButton>
#include <QVBoxLayout>

#include <algorithm>

namespace nest::ui {

namespace {

// Saving to a cluster file: the whole workspace elsewhere, the cluster only, or neither.
ClusterSaveChoice askClusterOrWorkspace(QWidget *parent, const QString &clusterFile)
{
    QMessageBox box(QMessageBox::Question, QObject::tr("Save"),
                    QObject::tr("%1 is a cluster file: it holds only the cluster, not the model or the "
                                "search settings you changed.").arg(QFileInfo(clusterFile).fileName()),
                    QMessageBox::NoButton, parent);
    box.setInformativeText(QObject::tr("Save everything as a workspace, or only the cluster (the model "
                                       "and search changes then stay unsaved)?"));
    QPushButton *workspace = box.addButton(QObject::tr("Save Workspace As…"), QMessageBox::AcceptRole);
    QPushButton *cluster = box.addButton(QObject::tr("Save Cluster Only"), QMessageBox::DestructiveRole);
    box.addButton(QMessageBox::Cancel);
    box.setDefaultButton(workspace);
    box.exec();
    if (box.clickedButton() == workspace)
        return ClusterSaveChoice::SaveWorkspaceAs;
    if (box.clickedButton() == cluster)
        return ClusterSaveChoice::SaveClusterOnly;
    return ClusterSaveChoice::Cancel;
}

// One document's autosaved changes: restore, open the original, or discard them.
RecoveryChoice askRestoreRecovery(QWidget *parent, const RecoveryOffer &offer)
{
    const QString what = offer.documentFile.isEmpty()
                             ? QObject::tr("an untitled workspace")
                             : QFileInfo(offer.documentFile).fileName();
    QMessageBox box(QMessageBox::Question, QObject::tr("Recover unsaved work"),
                    QObject::tr("NEST Planner did not close cleanly. Unsaved changes to %1 were autosaved on %2.\n\n"
                                "Restore: open them. Open Original: open the file as saved and keep the "
                                "autosaved changes for later (offered at the next start). Discard: delete "
                                "them (%3).")
                        .arg(what, QLocale().toString(QFileInfo(offer.recoveryFile).lastModified(), QLocale::ShortFormat),
                             offer.recoveryFile),
                    QMessageBox::NoButton, parent);
    QPushButton *restore = box.addButton(QObject::tr("Restore"), QMessageBox::AcceptRole);
    QPushButton *original = box.addButton(QObject::tr("Open Original"), QMessageBox::RejectRole);
    QPushButton *discard = box.addButton(QObject::tr("Discard"), QMessageBox::DestructiveRole);
    box.setDefaultButton(restore);
    box.setEscapeButton(original);   // closing the box keeps the work
    box.exec();
    if (box.clickedButton() == discard)
        return RecoveryChoice::Discard;
    return box.clickedButton() == restore ? RecoveryChoice::Restore : RecoveryChoice::OpenOriginal;
}

// Several documents' autosaved changes: restore or discard one, or decide later.
RecoveryAnswer askChooseRecovery(QWidget *parent, const QList<RecoveryOffer> &offers)
{
    QDialog dialog(parent);
    dialog.setWindowTitle(QObject::tr("Recover unsaved work"));
    auto *layout = new QVBoxLayout(&dialog);
    auto *text = new QLabel(QObject::tr("NEST Planner did not close cleanly. Unsaved work was autosaved "
                                        "for these documents. Restore one, discard one, or decide later "
                                        "(they are offered again at the next start, and when the file is "
                                        "opened)."));
    text->setWordWrap(true);
    layout->addWidget(text);
    auto *list = new QListWidget;
    for (const RecoveryOffer &offer : offers) {
        const QString what = offer.documentFile.isEmpty() ? QObject::tr("an untitled workspace")
                                                          : QDir::toNativeSeparators(offer.documentFile);
        auto *item = new QListWidgetItem(
            QObject::tr("%1 — autosaved %2")
                .arg(what, QLocale().toString(QFileInfo(offer.recoveryFile).lastModified(), QLocale::ShortFormat)),
            list);
        item->setToolTip(QDir::toNativeSeparators(offer.recoveryFile));
    }
    list->setCurrentRow(0);
    layout->addWidget(list);
    auto *buttons = new QDialogButtonBox;
    QPushButton *restore = buttons->addButton(QObject::tr("Restore"), QDialogButtonBox::AcceptRole);
    QPushButton *discard = buttons->addButton(QObject::tr("Discard"), QDialogButtonBox::DestructiveRole);
    QPushButton *later = buttons->addButton(QObject::tr("Later"), QDialogButtonBox::RejectRole);
    restore->setDefault(true);
    layout->addWidget(buttons);
    RecoveryAnswer answer;
    QObject::connect(buttons, &QDialogButtonBox::clicked, &dialog, [&](QAbstractButton *b) {
        answer.index = list->currentRow();
        answer.action = b == restore   ? RecoveryAnswer::Action::Restore
                        : b == discard ? RecoveryAnswer::Action::Discard
                                       : RecoveryAnswer::Action::Later;
        dialog.done(b == later ? QDialog::Rejected : QDialog::Accepted);
    });
    QObject::connect(list, &QListWidget::itemDoubleClicked, restore, &QPushButton::click);
    dialog.resize(std::max(dialog.sizeHint().width(), list->sizeHintForColumn(0) + 48), dialog.sizeHint().height());
    if (dialog.exec() != QDialog::Accepted)
        return RecoveryAnswer{};
    return answer;
}

} // namespace

Prompts dialogPrompts(QWidget *parent, const Settings &settings)
{
    Prompts prompts;
    prompts.clusterOrWorkspace = [parent](const QString &clusterFile) { return askClusterOrWorkspace(parent, clusterFile); };
    prompts.unsavedChanges = [parent](const QString &name) {
        const auto answer = QMessageBox::warning(parent, QObject::tr("Unsaved changes"),
                                                 QObject::tr("%1 has unsaved changes. Save them?").arg(name),
                                                 QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel,
                                                 QMessageBox::Save);
        return answer == QMessageBox::Save      ? UnsavedChoice::Save
               : answer == QMessageBox::Discard ? UnsavedChoice::Discard
                                                : UnsavedChoice::Cancel;
    };
    prompts.workspaceFileName = [parent, &settings](const QString &suggested) {
        return QFileDialog::getSaveFileName(parent, QObject::tr("Save workspace"),
                                            suggested.isEmpty() ? settings.saveDirectory() : suggested,
                                            QObject::tr("NEST workspace (*.nestws.json)"));
    };
    prompts.restoreRecovery = [parent](const RecoveryOffer &offer) { return askRestoreRecovery(parent, offer); };
    prompts.chooseRecovery = [parent](const QList<RecoveryOffer> &offers) { return askChooseRecovery(parent, offers); };
    prompts.warning = [parent](const QString &title, const QString &message) {
        QMessageBox::warning(parent, title, message);
    };
    return prompts;
}

} // namespace nest::ui
