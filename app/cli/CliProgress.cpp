#include "CliProgress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unistd.h>

namespace nest::cli {

namespace {

std::string seconds(double s)
{
    char buf[32];
    if (s < 120)
        std::snprintf(buf, sizeof buf, "%.0f s", s);
    else if (s < 7200)
        std::snprintf(buf, sizeof buf, "%.0f min", s / 60);
    else
        std::snprintf(buf, sizeof buf, "%.1f h", s / 3600);
    return buf;
}

} // namespace

CommandHooks &commandHooks()
{
    thread_local CommandHooks hooks;
    return hooks;
}

const CancelToken &commandCancelToken()
{
    static const CancelToken never;
    const CommandHooks &h = commandHooks();
    return h.cancel ? *h.cancel : never;
}

TerminalProgress::TerminalProgress(std::string label, bool forced, double quietSeconds)
    : m_label(std::move(label)), m_tty(isatty(STDERR_FILENO) == 1), m_quiet(quietSeconds)
{
    m_enabled = m_tty || forced;
}

TerminalProgress::~TerminalProgress()
{
    finish();
}

void TerminalProgress::setEstimate(double s)
{
    const std::lock_guard lock(m_mutex);
    m_estimate = std::isfinite(s) && s > 0 ? s : 0;
}

std::string TerminalProgress::format(const std::string &label, double fraction, double elapsed, double estimate,
                                     const std::string &detail)
{
    const double f = std::isfinite(fraction) ? std::clamp(fraction, 0.0, 1.0) : 0.0;
    constexpr int width = 20;
    std::string bar(static_cast<size_t>(std::lround(width * f)), '#');
    bar.resize(width, '.');
    char pct[16];
    std::snprintf(pct, sizeof pct, "%.0f %%", 100 * f);
    std::string line = label + ": [" + bar + "] " + pct + ", " + seconds(elapsed);
    // The rate so far once a little work is done; before that the estimate, if any.
    if (f >= 0.02 && f < 1)
        line += ", ~" + seconds(elapsed * (1 - f) / f) + " left";
    else if (f < 1 && estimate > 0)
        line += ", ~" + seconds(std::max(estimate - elapsed, 1.0)) + " left (estimate)";
    else if (f < 1)
        line += ", time left unknown";
    if (!detail.empty())
        line += ", " + detail;
    return line;
}

void TerminalProgress::update(double fraction, const std::string &detail)
{
    if (!m_enabled)
        return;
    const std::lock_guard lock(m_mutex);
    const Clock::time_point now = Clock::now();
    const double elapsed = std::chrono::duration<double>(now - m_start).count();
    if (elapsed < m_quiet)
        return;
    // A terminal redraws ten times a second; a log gets a line a second.
    const double every = m_tty ? 0.1 : 1.0;
    if (m_printed && std::chrono::duration<double>(now - m_lastPrint).count() < every)
        return;
    const std::string line = format(m_label, fraction, elapsed, m_estimate, detail);
    if (m_tty) {
        const size_t pad = m_lastWidth > line.size() ? m_lastWidth - line.size() : 0;
        std::fprintf(stderr, "\r%s%*s", line.c_str(), static_cast<int>(pad), "");
    } else {
        std::fprintf(stderr, "%s\n", line.c_str());
    }
    std::fflush(stderr);
    m_lastWidth = line.size();
    m_lastPrint = now;
    m_printed = true;
}

void TerminalProgress::finish()
{
    const std::lock_guard lock(m_mutex);
    if (m_printed && m_tty) {  // the bar is gone when the result is printed
        std::fprintf(stderr, "\r%*s\r", static_cast<int>(m_lastWidth), "");
        std::fflush(stderr);
    }
    m_printed = false;
}

} // namespace nest::cli
