// nest_planner._core: the binding under the Python package (docs/python.md). It adds no
// planning of its own: run() executes one of nest-cli's sub-commands (the same table, option
// parser, loaders and JSON writers as the executable) with the arguments the package built
// from its keywords, on a worker thread, and returns what the command printed. The command's
// std::cout and std::cerr go to strings of that thread only (several calls may run at once,
// from a thread pool). While it runs the interpreter is free (the GIL is released); every
// 50 ms the calling thread takes the GIL back to hand the latest progress to the Python
// callback and to look for a signal: Ctrl+C (KeyboardInterrupt) or an exception in the
// callback cancels the search through core's CancelToken, waits for the command to stop and
// re-raises.
#include "CliArgs.h"
#include "CliCommands.h"
#include "CliProgress.h"
#include "Calibration.h"
#include "CalibrationIO.h"
#include "FrameworkExport.h"
#include "JsonUtil.h"
#include "PlanIO.h"
#include "Workspace.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <exception>
#include <iostream>
#include <mutex>
#include <streambuf>
#include <string>
#include <thread>
#include <vector>

namespace py = pybind11;
using namespace nest;
using namespace nest::cli;

namespace {

thread_local std::string *tOut = nullptr;
thread_local std::string *tErr = nullptr;

// A stream buffer for std::cout / std::cerr that writes to the calling thread's string when
// that thread runs a command, else to the stream's own buffer (the interpreter's output).
class ThreadRoutedBuf : public std::streambuf {
public:
    using Target = std::string *(*)();  // the calling thread's string, or null
    ThreadRoutedBuf(std::streambuf *original, Target target) : m_original(original), m_target(target)
    {
    }

protected:
    int overflow(int c) override
    {
        if (c == traits_type::eof())
            return traits_type::not_eof(c);
        if (std::string *s = m_target()) {
            s->push_back(static_cast<char>(c));
            return c;
        }
        return m_original->sputc(static_cast<char>(c));
    }
    std::streamsize xsputn(const char *data, std::streamsize n) override
    {
        if (std::string *s = m_target()) {
            s->append(data, static_cast<size_t>(n));
            return n;
        }
        return m_original->sputn(data, n);
    }
    int sync() override { return m_target() ? 0 : m_original->pubsync(); }

private:
    std::streambuf *m_original;
    Target m_target;
};

std::string *outTarget() { return tOut; }
std::string *errTarget() { return tErr; }

void routeStandardStreams()
{
    static ThreadRoutedBuf out(std::cout.rdbuf(), &outTarget);
    static ThreadRoutedBuf err(std::cerr.rdbuf(), &errTarget);
    std::cout.rdbuf(&out);
    std::cerr.rdbuf(&err);
}

struct Outcome {
    int rc = 0;
    std::string out;
    std::string err;
};

// Runs `command` with `args`; (rc, stdout, stderr). rc as nest-cli's: 0 success, 2 bad input
// (the reason on stderr), 1 an internal failure.
py::tuple run(const std::string &command, const std::vector<std::string> &args, const py::object &progress)
{
    const auto &table = commandTable();
    const auto it = table.find(command);
    if (it == table.end())
        throw py::value_error("unknown nest-cli command '" + command + "'");
    const Command fn = it->second;

    struct Shared {
        CancelToken cancel;
        std::mutex mutex;
        std::condition_variable done;
        bool finished = false;
        std::atomic<double> fraction{-1};
        std::atomic<double> best{0};
        Outcome outcome;
    };
    auto shared = std::make_shared<Shared>();
    std::thread worker([shared, fn, args, command] {
        Outcome &o = shared->outcome;
        tOut = &o.out;
        tErr = &o.err;
        CommandHooks &hooks = commandHooks();
        hooks.cancel = &shared->cancel;
        hooks.progress = [shared](double fraction, double best) {
            shared->best.store(best);
            shared->fraction.store(fraction);
        };
        try {
            o.rc = fn(args);
        } catch (const HelpRequested &h) {
            o.out += h.text;
            o.rc = 0;
        } catch (const UsageError &e) {
            o.err += "nest-cli " + command + ": " + e.message + "\n";
            o.rc = 2;
        } catch (const std::exception &e) {
            o.err += "nest-cli " + command + ": internal error: " + e.what() + "\n";
            o.rc = 1;
        } catch (...) {
            o.err += "nest-cli " + command + ": internal error\n";
            o.rc = 1;
        }
        std::cout.flush();
        std::cerr.flush();
        hooks = CommandHooks{};
        tOut = nullptr;
        tErr = nullptr;
        const std::lock_guard lock(shared->mutex);
        shared->finished = true;
        shared->done.notify_all();
    });

    const auto waitFor = [&](std::chrono::milliseconds d) {
        py::gil_scoped_release release;
        std::unique_lock lock(shared->mutex);
        return shared->done.wait_for(lock, d, [&] { return shared->finished; });
    };
    const auto stop = [&] {
        shared->cancel.cancel();
        {
            py::gil_scoped_release release;
            worker.join();
        }
    };
    double shown = -1;
    while (!waitFor(std::chrono::milliseconds(50))) {
        if (PyErr_CheckSignals() != 0) {
            py::error_already_set e;  // KeyboardInterrupt, or what the signal handler raised
            stop();
            throw e;
        }
        const double f = shared->fraction.load();
        if (!progress.is_none() && f >= 0 && f != shown) {
            shown = f;
            try {
                progress(f, shared->best.load());
            } catch (...) {
                stop();
                throw;
            }
        }
    }
    {
        py::gil_scoped_release release;
        worker.join();
    }
    const Outcome &o = shared->outcome;
    return py::make_tuple(o.rc, py::bytes(o.out), py::bytes(o.err));
}

// A plan, workspace, calibration or runs file read by core's own loader: (true, the JSON as
// core writes it back) or (false, the loader's message "FILE: at PATH: REASON"). Runs have no
// writer: their file's JSON comes back once every run in it has loaded.
py::tuple load(const std::string &kind, const std::string &file)
{
    std::string error;
    Json j;
    {
        py::gil_scoped_release release;
        if (kind == "plan") {
            if (auto p = loadPlan(file))
                j = planToJson(*p);
            else
                error = p.error();
        } else if (kind == "workspace") {
            if (auto w = loadWorkspace(file))
                j = workspaceToJson(*w);
            else
                error = w.error();
        } else if (kind == "calibration") {
            if (auto c = loadCalibration(file))
                j = c->toJson();
            else
                error = c.error();
        } else if (kind == "runs") {
            if (auto r = loadMeasuredRuns(file); !r)
                error = r.error();
            else if (auto raw = readJsonFile(file))
                j = *raw;
            else
                error = raw.error();
        } else {
            throw py::value_error("unknown kind '" + kind + "'");
        }
    }
    if (!error.empty())
        return py::make_tuple(false, error);
    return py::make_tuple(true, j.dump(2, ' ', false, Json::error_handler_t::replace));
}

} // namespace

PYBIND11_MODULE(_core, m)
{
    m.doc() = "NEST Planner core: runs nest-cli's sub-commands in-process (use the nest_planner package)";
    m.attr("__version__") = NEST_VERSION;
    routeStandardStreams();
    m.def("run", &run, py::arg("command"), py::arg("args"), py::arg("progress") = py::none(),
          "Run a nest-cli sub-command; returns (exit_code, stdout_bytes, stderr_bytes).");
    m.def("load", &load, py::arg("kind"), py::arg("file"),
          "Read a plan, workspace, calibration or runs file with core's loader: (ok, json_or_message).");
    m.def("commands", [] {
        std::vector<std::string> names;
        for (const auto &[name, fn] : commandTable())
            names.push_back(name);
        return names;
    });
    m.def("default_export_file_name", [](const std::string &format) {
        const auto f = exportFormatFromString(format);
        if (!f)
            throw py::value_error("unknown export format '" + format + "' (known: " + exportFormatNameList() + ")");
        return defaultExportFileName(*f);
    });
}
