// nest-planner [FILE] [--run] [--run-baselines]
//              [--tab topology|placement|memory|breakdown|timeline|summary|compare|sweep]
//              [--screenshot PNG] [--export FILE]
// --run-baselines runs NEST and the baseline planners, pins them and compares them (the
// Compare tab exports its multi-page report as .pdf, and .png, .json, .csv).
// Opens the editor with FILE (a workspace, a cluster, or a plan evaluated on the sample
// workspace), or the welcome page when none is given (a batch run with no FILE shows the
// quick-start sample). --run plans before anything
// else; --tab selects the central tab. With --screenshot the window is shown at 1400x900
// with the default layout (the user's settings are neither read nor written), rendered to
// PNG, and the program exits; --export writes the current tab by extension (.png, .svg,
// .pdf) or the plan (.json) and exits. Both wait for the planning (or the pinned plan's
// evaluation) to finish first. Exit codes: 0 success, 1 a file could not be written,
// 2 bad arguments or a file that cannot be loaded, 3 fail-safe timeout, 4 planning failed
// or there is no plan to export. Without --screenshot/--export, the recovery files left by a
// crash are listed once the window is shown, and opening a file offers its own.
#include "DocumentFiles.h"
#include "MainWindow.h"
#include "PlanSession.h"
#include "SaveFile.h"
#include "TopologyView.h"

#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QMessageBox>
#include <QTemporaryDir>
#include <QTabWidget>
#include <QTimer>

#include <cstdio>
#include <string>
#include <functional>
#include <malloc.h>
#include <memory>

namespace {

void usage(FILE *out)
{
    std::fprintf(out,
                 "usage: nest-planner [WORKSPACE.nestws.json | CLUSTER.json | PLAN.json] [--run] [--run-baselines]\n"
                 "                    [--tab topology|placement|memory|breakdown|timeline|summary|compare|sweep]\n"
                 "                    [--screenshot FILE.png] [--export FILE.png|.svg|.pdf|.json|.csv]\n"
                 "       nest-planner --help | --version\n");
}

struct Options {
    QString file, screenshot, exportFile, tab;
    bool run = false;
    bool runBaselines = false;
};

// Parses the arguments; returns -1 to go on, else the exit code.
int parse(const QStringList &args, Options &o)
{
    auto valueOf = [&](int &i, const QString &name, QString &out) {
        const QString &a = args[i];
        if (a.startsWith(name + QLatin1Char('='))) {
            out = a.mid(name.size() + 1);
            return true;
        }
        if (i + 1 >= args.size()) {
            std::fprintf(stderr, "nest-planner: %s needs a value\n", qPrintable(name));
            return false;
        }
        out = args[++i];
        return true;
    };
    for (int i = 1; i < args.size(); ++i) {
        const QString &a = args[i];
        const QString name = a.section(QLatin1Char('='), 0, 0);
        if (name == QLatin1String("--screenshot")) {
            if (!valueOf(i, name, o.screenshot))
                return 2;
        } else if (name == QLatin1String("--export")) {
            if (!valueOf(i, name, o.exportFile))
                return 2;
        } else if (name == QLatin1String("--tab")) {
            if (!valueOf(i, name, o.tab))
                return 2;
            if (!nest::ui::MainWindow::tabNames().contains(o.tab)) {
                std::fprintf(stderr, "nest-planner: --tab expects one of %s, got '%s'\n",
                             qPrintable(nest::ui::MainWindow::tabNames().join(QLatin1Char('|'))), qPrintable(o.tab));
                return 2;
            }
        } else if (a == QLatin1String("--run")) {
            o.run = true;
        } else if (a == QLatin1String("--run-baselines")) {
            o.runBaselines = true;
        } else if (a.startsWith(QLatin1String("-"))) {
            std::fprintf(stderr, "nest-planner: unknown option %s\n", qPrintable(a));
            usage(stderr);
            return 2;
        } else if (o.file.isEmpty()) {
            o.file = a;
        } else {
            std::fprintf(stderr, "nest-planner: more than one file given\n");
            return 2;
        }
    }
    if (!o.exportFile.isEmpty()) {
        const QString ext = QFileInfo(o.exportFile).suffix().toLower();
        if (ext != QLatin1String("png") && ext != QLatin1String("svg") && ext != QLatin1String("pdf") &&
            ext != QLatin1String("json") && ext != QLatin1String("csv")) {
            std::fprintf(stderr, "nest-planner: --export expects a .png, .svg, .pdf or .json file, got '%s'\n",
                         qPrintable(o.exportFile));
            return 2;
        }
    }
    return -1;
}

// Calls `then` once no planning job runs any more (at once when none runs).
void whenIdle(nest::ui::PlanSession *planning, const std::function<void()> &then)
{
    if (!planning->isRunning()) {
        QTimer::singleShot(0, planning, then);
        return;
    }
    auto *guard = new QObject(planning);
    QObject::connect(planning, &nest::ui::PlanSession::runEnded, guard, [guard, then] {
        guard->deleteLater();
        QTimer::singleShot(0, guard->parent(), then);
    });
}

// --help and --version answer without a display (no QApplication yet): their exit code, or
// -1 to go on.
int answerWithoutDisplay(int argc, char **argv)
{
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--help" || a == "-h") {
            usage(stdout);
            return 0;
        }
        if (a == "--version") {
            std::printf("nest-planner %s\n", NEST_VERSION);
            return 0;
        }
    }
    return -1;
}

// Opens FILE; with none, the welcome page (a batch run: the quick-start sample); a plan file
// is evaluated on the sample workspace. In a batch run a file that cannot be opened ends the program (exit 2,
// returned), otherwise it is reported in a dialog. -1 to go on.
int openInputs(nest::ui::MainWindow &window, const Options &o, bool batch)
{
    bool fileIsPlan = false;
    if (!o.file.isEmpty()) {
        const auto peek = nest::ui::readDocumentFile(o.file);
        fileIsPlan = peek && peek->kind == nest::ui::LoadedFile::Kind::Plan;
    }
    QStringList toOpen;
    // With no file the window starts on its welcome page; a batch run has something to
    // show, and a plan is evaluated on the sample's cluster and model.
    if ((o.file.isEmpty() && batch) || fileIsPlan)
        toOpen << nest::ui::sampleWorkspacePath();
    if (!o.file.isEmpty())
        toOpen << o.file;
    for (const QString &f : toOpen) {
        if (f.isEmpty())
            continue;
        QString error;
        const bool sample = f != o.file;
        const bool opened = sample ? window.openSample(f, &error) : window.openFile(f, &error);
        if (!opened) {
            if (batch) {
                std::fprintf(stderr, "nest-planner: %s\n", qPrintable(error));
                return 2;
            }
            QMessageBox::warning(&window, QObject::tr("Could not open"), error);
        }
    }
    return -1;
}

// The headless run of --screenshot / --export: waits for every background job, then writes
// the export and the screenshot, and ends the event loop with the exit code.
class HeadlessRun {
public:
    HeadlessRun(QApplication &app, nest::ui::MainWindow &window, const Options &o, const QString &planError)
        : m_app(app), m_window(window), m_planning(window.planning()), m_o(o), m_planError(planError)
    {
    }

    // Shows the window at 1400 x 900 and runs the event loop; returns the exit code.
    int exec()
    {
        m_window.resize(1400, 900);
        m_window.show();
        // Fail-safe: never hang (e.g. a platform that never exposes the window).
        QTimer::singleShot(120000, &m_app, [this] {
            std::fprintf(stderr, "nest-planner: timed out\n");
            m_app.exit(3);
        });
        QTimer::singleShot(50, &m_window, [this] { whenAllIdle([this] { showResult(); }); });
        m_app.exec();
        return m_code;
    }

private:
    QApplication &m_app;
    nest::ui::MainWindow &m_window;
    nest::ui::PlanSession *m_planning;
    const Options &m_o;
    const QString &m_planError;
    int m_code = 3;

    void finish(int code)
    {
        m_code = code;
        m_app.exit(code);
    }

    // Waits for the planning, then for the baselines, sweeps and pinned-plan evaluations.
    void whenAllIdle(const std::function<void()> &then)
    {
        whenIdle(m_planning, [this, then] {
            if (m_window.isComparing())
                QTimer::singleShot(50, &m_window, [this, then] { whenAllIdle(then); });
            else
                then();
        });
    }

    // The requested tab, fitted; its pictures are taken once it has painted.
    void showResult()
    {
        if (m_o.run && !m_planError.isEmpty()) {
            std::fprintf(stderr, "nest-planner: planning failed: %s\n", qPrintable(m_planError));
            finish(4);
            return;
        }
        if (!m_o.tab.isEmpty())
            m_window.setCurrentTab(m_o.tab);
        m_window.view()->fitToView();
        QTimer::singleShot(400, &m_window, [this] {
            int code = exportCurrent();
            if (code == 0)
                code = saveScreenshot();
            finish(code);
        });
    }

    // --export: .json is the plan, except on the Compare and Sweep tabs (their data); other
    // extensions are the current tab. 0, 1 (not written) or 4 (no plan to export).
    int exportCurrent()
    {
        if (m_o.exportFile.isEmpty())
            return 0;
        const int tab = m_window.tabs()->currentIndex();
        const bool isJson = QFileInfo(m_o.exportFile).suffix().toLower() == QLatin1String("json") &&
                            tab != nest::ui::MainWindow::CompareTab && tab != nest::ui::MainWindow::SweepTab;
        if (isJson && !m_planning->current()) {
            std::fprintf(stderr, "nest-planner: %s: no plan to export (add --run)\n", qPrintable(m_o.exportFile));
            return 4;
        }
        QString error;
        const bool ok = isJson ? m_window.exportPlan(m_o.exportFile, &error) : m_window.exportView(m_o.exportFile, &error);
        if (!ok) {
            std::fprintf(stderr, "nest-planner: %s\n", qPrintable(error));
            return 1;
        }
        return 0;
    }

    // --screenshot: the window as PNG, written atomically. 0 or 1.
    int saveScreenshot()
    {
        if (m_o.screenshot.isEmpty())
            return 0;
        QString error;
        const QImage image = m_window.grab().toImage();
        const bool ok = !image.isNull() &&
                        nest::ui::writeFileAtomically(m_o.screenshot, [&](QIODevice *device, QString *why) {
                            if (!image.save(device, "PNG")) {
                                *why = QObject::tr("PNG encoding failed");
                                return false;
                            }
                            return true;
                        }, &error);
        if (!ok) {
            std::fprintf(stderr, "nest-planner: %s\n",
                         qPrintable(error.isEmpty() ? QStringLiteral("could not grab the window") : error));
            return 1;
        }
        return 0;
    }
};

} // namespace

int main(int argc, char **argv)
{
    // Live mode re-plans after every edit: keep the planner's large tables in the heap
    // between plans instead of handing them back to the kernel and faulting them in again.
    // Halves the re-plan time of the larger cases (docs/planner.md, "Re-plan latency").
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    if (const int code = answerWithoutDisplay(argc, argv); code >= 0)
        return code;
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("nest-planner"));
    QApplication::setOrganizationName(QStringLiteral("nest-planner"));

    Options o;
    if (const int code = parse(QApplication::arguments(), o); code >= 0)
        return code;
    const bool batch = !o.screenshot.isEmpty() || !o.exportFile.isEmpty();

    // A batch run is reproducible: default layout, no recent files touched, no autosave.
    std::unique_ptr<QTemporaryDir> scratch;
    std::unique_ptr<nest::ui::Settings> settings;
    if (batch) {
        scratch = std::make_unique<QTemporaryDir>();
        settings = std::make_unique<nest::ui::Settings>(scratch->filePath(QStringLiteral("settings.ini")));
        settings->setAutosaveIntervalSeconds(0);
        settings->setRecoveryDirectory(scratch->filePath(QStringLiteral("recovery")));
    }
    nest::ui::MainWindow window(nullptr, std::move(settings));
    window.setOffersRecovery(!batch);   // a batch run asks nothing
    nest::ui::PlanSession *planning = window.planning();
    if (const int code = openInputs(window, o, batch); code >= 0)
        return code;
    QString planError;
    QObject::connect(planning, &nest::ui::PlanSession::failed, &window,
                     [&planError](const QString &reason) { planError = reason; });
    // Let the load's deferred work (a pinned plan's evaluation) start before --run.
    QTimer::singleShot(0, &window, [&] {
        if (o.run)
            planning->run();
        if (o.runBaselines)
            window.runBaselines();
        if (!o.tab.isEmpty())
            window.setCurrentTab(o.tab);
    });
    if (batch)
        return HeadlessRun(app, window, o, planError).exec();

    // A pinned plan arriving later switches to Placement: --tab has the last word.
    if (!o.tab.isEmpty())
        QTimer::singleShot(50, &window, [&] { whenIdle(planning, [&] { window.setCurrentTab(o.tab); }); });
    window.show();
    QTimer::singleShot(0, &window, [&window] { window.offerRecovery(); });
    return app.exec();
}
