#include "WindowWording.h"

#include <QCoreApplication>
#include <QRegularExpression>

namespace nest::ui {

namespace {

// The control that sets what a CLI flag sets (the flags of docs/formats.md).
QString controlFor(const QString &flag)
{
    struct Entry {
        const char *flag;
        const char *control;
    };
    static const Entry entries[] = {
        {"seq", QT_TRANSLATE_NOOP("WindowWording", "the Sequence length field of the Model dock")},
        {"batch", QT_TRANSLATE_NOOP("WindowWording", "the Global batch field of the Model dock")},
        {"max-stages", QT_TRANSLATE_NOOP("WindowWording", "Max stages in the Search dock")},
        {"memory-headroom", QT_TRANSLATE_NOOP("WindowWording", "Memory headroom in the Search dock")},
        {"microbatch", QT_TRANSLATE_NOOP("WindowWording", "Micro-batch sizes in the Search dock")},
        {"framework", QT_TRANSLATE_NOOP("WindowWording", "Framework in the Search dock")},
        {"planner", QT_TRANSLATE_NOOP("WindowWording", "Planner in the Search dock")},
        {"pipeline-units", QT_TRANSLATE_NOOP("WindowWording", "Pipeline units in the Search dock")},
        {"fit", QT_TRANSLATE_NOOP("WindowWording", "the parameters to fit")},
        {"model", QT_TRANSLATE_NOOP("WindowWording", "the model (Model dock)")},
        {"cluster", QT_TRANSLATE_NOOP("WindowWording", "the cluster")},
    };
    for (const Entry &e : entries)
        if (flag == QLatin1String(e.flag))
            return QCoreApplication::translate("WindowWording", e.control);
    return QCoreApplication::translate("WindowWording", "the '%1' setting").arg(flag);
}

} // namespace

QString windowWording(const QString &message)
{
    // "--flag", optionally followed by an upper-case placeholder ("--seq N", "--fit LIST").
    static const QRegularExpression flag(QStringLiteral("--([a-z][a-z0-9-]*)(?: [A-Z]+\\b)?"));
    QString out;
    qsizetype last = 0;
    for (auto it = flag.globalMatch(message); it.hasNext();) {
        const QRegularExpressionMatch m = it.next();
        out += message.mid(last, m.capturedStart() - last);
        out += controlFor(m.captured(1));
        last = m.capturedEnd();
    }
    out += message.mid(last);
    return out;
}

QString counted(long long n, const QString &singular, const QString &plural)
{
    return QStringLiteral("%1 %2").arg(n).arg(n == 1 ? singular : plural);
}

} // namespace nest::ui
