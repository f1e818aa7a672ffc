// nest-planner [WORKSPACE|CLUSTER] [--screenshot FILE]
// Opens the editor with the file (a workspace if it parses as one, else a cluster), or the
// quick-start sample when none is given. With --screenshot the window is shown at
// 1400x900 with the default dock layout (the user's settings are neither read nor
// written), rendered to FILE (PNG) once the event loop has laid it out, and the program
// exits: 0 on success, 1 when the PNG cannot be written, 2 for bad arguments or a file
// that cannot be loaded, 3 on the fail-safe timeout. Without it, a recovery file left by a
// crash is offered once the window is shown.
#include "MainWindow.h"
#include "SaveFile.h"
#include "TopologyView.h"

#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QMessageBox>
#include <QTemporaryDir>
#include <QTimer>

#include <cstdio>
#include <memory>

namespace {

QString findQuickstart()
{
    const QString rel = QStringLiteral("sample_configs/workspaces/quickstart.nestws.json");
    const QString appDir = QCoreApplication::applicationDirPath();
    const QStringList candidates{appDir + QStringLiteral("/../") + rel,
                                 appDir + QStringLiteral("/../../") + rel,
                                 appDir + QStringLiteral("/../share/nest-planner/") + rel,
                                 QStringLiteral(NEST_SOURCE_DIR "/") + rel};
    for (const QString &c : candidates)
        if (QFileInfo::exists(c))
            return QDir::cleanPath(c);
    return {};
}

void usage(FILE *out)
{
    std::fprintf(out, "usage: nest-planner [WORKSPACE.nestws.json | CLUSTER.json] [--screenshot FILE.png]\n");
}

} // namespace

int main(int argc, char **argv)
{
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("nest-planner"));
    QApplication::setOrganizationName(QStringLiteral("nest-planner"));

    QString file, screenshot;
    const QStringList args = QApplication::arguments();
    for (int i = 1; i < args.size(); ++i) {
        const QString &a = args[i];
        if (a == QLatin1String("--screenshot")) {
            if (i + 1 >= args.size()) {
                std::fprintf(stderr, "nest-planner: --screenshot needs a file name\n");
                return 2;
            }
            screenshot = args[++i];
        } else if (a.startsWith(QLatin1String("--screenshot="))) {
            screenshot = a.mid(13);
        } else if (a == QLatin1String("--help") || a == QLatin1String("-h")) {
            usage(stdout);
            return 0;
        } else if (a.startsWith(QLatin1String("-"))) {
            std::fprintf(stderr, "nest-planner: unknown option %s\n", qPrintable(a));
            usage(stderr);
            return 2;
        } else if (file.isEmpty()) {
            file = a;
        } else {
            std::fprintf(stderr, "nest-planner: more than one file given\n");
            return 2;
        }
    }

    // A screenshot is reproducible: default layout, no recent files touched, no autosave.
    std::unique_ptr<QTemporaryDir> scratch;
    std::unique_ptr<nest::ui::Settings> settings;
    if (!screenshot.isEmpty()) {
        scratch = std::make_unique<QTemporaryDir>();
        settings = std::make_unique<nest::ui::Settings>(scratch->filePath(QStringLiteral("settings.ini")));
        settings->setAutosaveIntervalSeconds(0);
        settings->setRecoveryDirectory(scratch->filePath(QStringLiteral("recovery")));
    }
    nest::ui::MainWindow window(nullptr, std::move(settings));
    const QString toLoad = file.isEmpty() ? findQuickstart() : file;
    if (!toLoad.isEmpty()) {
        QString error;
        const bool opened = file.isEmpty() ? window.openSample(toLoad, &error) : window.openFile(toLoad, &error);
        if (!opened) {
            if (!screenshot.isEmpty()) {
                std::fprintf(stderr, "nest-planner: %s\n", qPrintable(error));
                return 2;
            }
            QMessageBox::warning(&window, QObject::tr("Could not open"), error);
        }
    }

    if (screenshot.isEmpty()) {
        window.show();
        QTimer::singleShot(0, &window, [&window] { window.offerRecovery(); });
        return app.exec();
    }

    window.resize(1400, 900);
    window.show();
    int code = 3;
    // Fail-safe: never hang (e.g. a platform that never exposes the window).
    QTimer::singleShot(30000, &app, [&] {
        std::fprintf(stderr, "nest-planner: screenshot timed out\n");
        app.exit(3);
    });
    QTimer::singleShot(400, &window, [&] {
        window.view()->fitToView();
        QTimer::singleShot(200, &window, [&] {
            const QImage image = window.grab().toImage();
            QString error;
            const bool ok = !image.isNull() &&
                nest::ui::writeFileAtomically(screenshot, [&](QIODevice *device, QString *why) {
                    if (!image.save(device, "PNG")) {
                        *why = QObject::tr("PNG encoding failed");
                        return false;
                    }
                    return true;
                }, &error);
            if (!ok) {
                std::fprintf(stderr, "nest-planner: %s\n", qPrintable(error.isEmpty() ? QStringLiteral("could not grab the window") : error));
                code = 1;
            } else {
                code = 0;
            }
            app.exit(code);
        });
    });
    app.exec();
    return code;
}
