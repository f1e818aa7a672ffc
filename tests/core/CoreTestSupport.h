#pragma once
// What the core tests share, without Qt (issue 20: the core and its tests build where Qt is
// absent): a temporary directory that removes itself, whole-file reads and writes, and
// runCli(), which runs the real nest-cli (NEST_CLI_PATH, defined for every test_cli_* suite)
// and keeps its exit code and output. The tests themselves use GoogleTest.
#include "SourceDir.h"
#include "DeviceSpec.h"
#include "ModelConfig.h"
#include "Topology.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace coretest {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
public:
    TempDir()
    {
        const char *base = std::getenv("TMPDIR");
        std::string pattern = std::string(base && *base ? base : "/tmp") + "/nest-test-XXXXXX";
        std::vector<char> buf(pattern.begin(), pattern.end());
        buf.push_back('\0');
        if (!mkdtemp(buf.data()))
            throw std::runtime_error("mkdtemp failed for " + pattern);
        m_path = buf.data();
    }
    ~TempDir()
    {
        std::error_code ec;
        std::filesystem::remove_all(m_path, ec);
    }
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;

    const std::string &path() const { return m_path; }
    // path() + "/" + name.
    std::string filePath(const std::string &name) const { return m_path + "/" + name; }

private:
    std::string m_path;
};

// The whole file; empty when it cannot be read.
inline std::string readFile(const std::string &path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Writes `data` to `path` (created or truncated); false when it cannot.
inline bool writeFile(const std::string &path, const std::string &data)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << data;
    return static_cast<bool>(out);
}

// A path under the source tree (NEST_SOURCE_DIR, from the generated SourceDir.h).
inline std::string sample(const std::string &rel) { return std::string(NEST_SOURCE_DIR "/") + rel; }

// Qt Test's QCOMPARE for doubles, kept when a test moves to GoogleTest: equal within a
// relative 1e-12 (qFuzzyCompare); an expected value within 1e-12 of zero needs an actual one
// within 1e-12 of zero; infinities must match in sign, NaN matches NaN.
inline ::testing::AssertionResult qFuzzyEqual(double actual, double expected)
{
    bool same = false;
    if (std::isnan(expected))
        same = std::isnan(actual);
    else if (std::isinf(expected))
        same = std::isinf(actual) && (actual < 0) == (expected < 0);
    else if (std::abs(expected) <= 1e-12)
        same = std::abs(actual) <= 1e-12;
    else
        same = std::abs(actual - expected) * 1e12 <= std::min(std::abs(actual), std::abs(expected));
    if (same)
        return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "actual " << actual << " != expected " << expected
                                         << " (relative 1e-12, as QCOMPARE of doubles)";
}
#define ASSERT_QFUZZY_EQ(actual, expected) ASSERT_TRUE(::coretest::qFuzzyEqual((actual), (expected)))
#define EXPECT_QFUZZY_EQ(actual, expected) EXPECT_TRUE(::coretest::qFuzzyEqual((actual), (expected)))

// A data row's name as a GoogleTest parameter name: every character other than a letter or
// a digit becomes '_' (GoogleTest rejects duplicate names, so two rows cannot merge).
inline std::string rowName(const std::string &name)
{
    std::string out = name;
    for (char &c : out)
        if (!std::isalnum(static_cast<unsigned char>(c)))
            c = '_';
    return out;
}

inline bool contains(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

// The made-up accelerator of the planner tests: 100 TFLOP/s, 1 TB/s HBM, `memoryBytes` of it.
inline nest::DeviceSpec testDevice(double memoryBytes = 80e9)
{
    nest::DeviceSpec d;
    d.name = "test-gpu";
    d.peakFlops = 100e12;
    d.memoryBytes = memoryBytes;
    d.memoryBandwidth = 1e12;
    return d;
}

// The precision tests' accelerator, in round numbers: 1,000 TFLOP/s BF16, 2,000 FP8 and MXFP8,
// 4,000 NVFP4, 1 TB/s HBM, 80 GB, a large-GEMM efficiency of 0.5 (an unknown class, so the
// low-precision efficiency ratios are the ones Transformer Engine measured: docs/cost-model.md).
inline nest::DeviceSpec roundDevice()
{
    nest::DeviceSpec d;
    d.name = "round-gpu";
    d.peakFlops = 1000e12;
    d.peakFp8Flops = 2000e12;
    d.peakMxfp8Flops = 2000e12;
    d.peakNvfp4Flops = 4000e12;
    d.memoryBytes = 80e9;
    d.memoryBandwidth = 1e12;
    d.matmulEfficiency = 0.5;
    return d;
}

inline nest::LinkParams linkOf(double bandwidth, double latency, double oversubscription = 1)
{
    nest::LinkParams l;
    l.bandwidth = bandwidth;
    l.latency = latency;
    l.oversubscription = oversubscription;
    return l;
}

// 4 levels: `perNode` devices per node, 2 nodes per rack, 3 racks per pod (oversubscribed
// 2), 2 pods (4): the width tests' small tree with every kind of level.
inline nest::Topology fourTierTree(int perNode, double memory = 80e9)
{
    return nest::Topology::uniform("width-test", testDevice(memory),
                                   {{"node", perNode, linkOf(200e9, 1e-6)},
                                    {"rack", 2, linkOf(50e9, 2e-6)},
                                    {"pod", 3, linkOf(50e9, 4e-6, 2)},
                                    {"cluster", 2, linkOf(50e9, 8e-6, 4)}});
}

// A tiny GPT of `layers` blocks (hidden 256, 8 heads, FFN 1024, vocabulary 1000, 256 tokens,
// batch 16): small enough for the exhaustive planner on the planner tests' trees.
inline nest::ModelConfig tinyGptConfig(int layers)
{
    nest::ModelConfig c = nest::familyDefaults("gpt");
    c.layers = layers;
    c.hidden = 256;
    c.heads = 8;
    c.kvHeads = 8;
    c.ffnHidden = 1024;
    c.vocab = 1000;
    c.seqLength = 256;
    if (c.maxPositions > 0)
        c.maxPositions = c.seqLength;
    c.globalBatch = 16;
    return c;
}

struct Run {
    int exitCode = -1;  // -2: crashed (killed by a signal); -1: did not finish in time
    std::string out, err;
};

// Runs `program` with `args` (no shell), stdin from /dev/null, until it exits or
// `timeoutMs` passes (then it is killed and exitCode is -1).
inline Run runProgram(const std::string &program, const std::vector<std::string> &args, int timeoutMs = 120000)
{
    Run r;
    int outPipe[2], errPipe[2];
    if (pipe(outPipe) != 0)
        return r;
    if (pipe(errPipe) != 0) {
        close(outPipe[0]);
        close(outPipe[1]);
        return r;
    }
    std::vector<std::string> argv{program};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char *> cargv;
    for (std::string &a : argv)
        cargv.push_back(a.data());
    cargv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
        const int devNull = open("/dev/null", O_RDONLY);
        if (devNull >= 0)
            dup2(devNull, 0);
        dup2(outPipe[1], 1);
        dup2(errPipe[1], 2);
        close(outPipe[0]);
        close(errPipe[0]);
        execv(program.c_str(), cargv.data());
        _exit(127);
    }
    close(outPipe[1]);
    close(errPipe[1]);
    if (pid < 0) {
        close(outPipe[0]);
        close(errPipe[0]);
        return r;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
    pollfd fds[2] = {{outPipe[0], POLLIN, 0}, {errPipe[0], POLLIN, 0}};
    std::string *sinks[2] = {&r.out, &r.err};
    int open = 2;
    bool timedOut = false;
    while (open > 0) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            timedOut = true;
            break;
        }
        const int n = ::poll(fds, 2, static_cast<int>(left.count()));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            continue;
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char buf[65536];
            const ssize_t got = read(fds[i].fd, buf, sizeof buf);
            if (got > 0) {
                sinks[i]->append(buf, static_cast<size_t>(got));
            } else if (got == 0 || errno != EINTR) {
                close(fds[i].fd);
                fds[i].fd = -1;
                --open;
            }
        }
    }
    for (pollfd &f : fds)
        if (f.fd >= 0)
            close(f.fd);
    if (timedOut)
        kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (timedOut)
        r.exitCode = -1;
    else if (WIFEXITED(status))
        r.exitCode = WEXITSTATUS(status);
    else
        r.exitCode = -2;
    return r;
}

#ifdef NEST_CLI_PATH
// The real nest-cli with `args`.
inline Run runCli(const std::vector<std::string> &args, int timeoutMs = 120000)
{
    return runProgram(NEST_CLI_PATH, args, timeoutMs);
}
#endif

} // namespace coretest

// ---- Text and JSON helpers for the converted CLI and reliability suites (issue 20, point 4;
// helper-tests1). Each keeps the Qt call it replaces: QString::split, trimmed, startsWith,
// contains(..., Qt::CaseInsensitive), QJsonDocument::fromJson(...).object().
#include <cctype>
#include <nlohmann/json.hpp>

namespace coretest {

// QString::split(sep): every part, empty ones included unless skipEmpty
// (Qt::SkipEmptyParts).
inline std::vector<std::string> split(const std::string &text, char sep, bool skipEmpty = false)
{
    std::vector<std::string> parts;
    std::string::size_type from = 0;
    while (true) {
        const std::string::size_type at = text.find(sep, from);
        const std::string part = text.substr(from, at == std::string::npos ? std::string::npos : at - from);
        if (!skipEmpty || !part.empty())
            parts.push_back(part);
        if (at == std::string::npos)
            return parts;
        from = at + 1;
    }
}

// QString::trimmed: without leading and trailing white space.
inline std::string trimmed(const std::string &text)
{
    const auto space = [](unsigned char c) { return std::isspace(c) != 0; };
    auto b = std::find_if_not(text.begin(), text.end(), space);
    auto e = std::find_if_not(text.rbegin(), std::string::const_reverse_iterator(b), space).base();
    return std::string(b, e);
}

inline bool startsWith(const std::string &text, const std::string &prefix) { return text.rfind(prefix, 0) == 0; }
inline bool endsWith(const std::string &text, const std::string &suffix)
{
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// contains(part, Qt::CaseInsensitive) for ASCII text.
inline bool containsNoCase(const std::string &text, const std::string &part)
{
    const auto lower = [](std::string s) {
        for (char &c : s)
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return s;
    };
    return contains(lower(text), lower(part));
}

// QJsonDocument::fromJson(text).object(): the top-level object, or an empty object when the
// text is not JSON or not an object (so a check on a key fails instead of throwing).
inline nlohmann::json jsonObject(const std::string &text)
{
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    return j.is_object() ? j : nlohmann::json::object();
}
// QJsonDocument::fromJson(text).isObject().
inline bool isJsonObject(const std::string &text) { return nlohmann::json::parse(text, nullptr, false).is_object(); }

} // namespace coretest
