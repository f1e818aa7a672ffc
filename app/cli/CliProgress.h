#pragma once
// Progress of long CLI work on stderr (issue 13): a bar, the time spent and an estimate of
// the time left. Shown only when stderr is a terminal, or when the user asks for it
// (`--progress`, then one line per second so a log stays readable); nothing is printed in
// the first second, so short runs stay quiet. update() may be called from any thread.
#include "Planner.h"

#include <chrono>
#include <functional>
#include <mutex>
#include <string>

namespace nest::cli {

// What a host that runs a command on its own thread (the Python module, python/) hands the
// searching commands (plan, compare): a cancellation token their search polls, and an observer
// of the progress the terminal bar shows. Set for the calling thread only; both empty when
// nest-cli runs the command, which then searches exactly as before.
struct CommandHooks {
    const CancelToken *cancel = nullptr;
    std::function<void(double fraction, double best)> progress;
};
CommandHooks &commandHooks();  // this thread's
// The token a command passes its search: the host's, else one that is never cancelled.
const CancelToken &commandCancelToken();

class TerminalProgress {
public:
    // `label` starts the line ("plan"). `forced`: print even when stderr is not a terminal.
    TerminalProgress(std::string label, bool forced, double quietSeconds = 1.0);
    ~TerminalProgress();
    TerminalProgress(const TerminalProgress &) = delete;
    TerminalProgress &operator=(const TerminalProgress &) = delete;

    // The time the work is expected to take before the first fractions arrive (e.g. the
    // search estimate); 0 = unknown.
    void setEstimate(double seconds);
    // `fraction` of the work done, in [0, 1]; `detail` follows the times ("best 1.23 s").
    void update(double fraction, const std::string &detail = {});
    // Clears the bar (on a terminal) if anything was printed.
    void finish();

    bool enabled() const { return m_enabled; }
    // The line update() would print after `elapsed` seconds, without the bar's carriage
    // return ("plan: [####......] 40 %, 2 s, ~3 s left, best 1.2 s"). For tests.
    static std::string format(const std::string &label, double fraction, double elapsed, double estimate,
                              const std::string &detail);

private:
    using Clock = std::chrono::steady_clock;
    std::string m_label;
    bool m_enabled = false;
    bool m_tty = false;
    double m_quiet = 1.0;
    double m_estimate = 0;
    Clock::time_point m_start = Clock::now();
    Clock::time_point m_lastPrint{};
    size_t m_lastWidth = 0;
    bool m_printed = false;
    std::mutex m_mutex;
};

} // namespace nest::cli
