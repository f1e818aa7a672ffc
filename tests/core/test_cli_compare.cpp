// `nest-cli compare`, `reproduce --quick`, `completion` and the CLI11 help of every
// sub-command, through the real binary: the JSON contract of compare (keys, order, NEST's
// ratio), usage errors with exit 2, the files reproduce writes (CSV rows derived from the
// grid, figures that are real PNG/SVG, NEST never below a baseline in them), mcmc's seed.
// Without the GUI build (no NEST_HAVE_FIGURES) reproduce writes no figures and says so.
#include "CoreTestSupport.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>

namespace {

using coretest::contains;
using coretest::jsonObject;
using coretest::runCli;
using coretest::split;
using nlohmann::json;
using Args = std::vector<std::string>;

Args operator+(Args a, const Args &b)
{
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// QString::toDouble: 0 when the text is not a whole number.
double toDouble(const std::string &text)
{
    char *end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    return end && *end == '\0' && !text.empty() ? v : 0.0;
}

int indexOf(const std::vector<std::string> &list, const std::string &item)
{
    const auto it = std::find(list.begin(), list.end(), item);
    return it == list.end() ? -1 : static_cast<int>(it - list.begin());
}

} // namespace

TEST(CliCompare, compareJsonContract)
{
    const coretest::Run r = runCli({"compare", "--cluster", "paper-spineleaf-64", "--model", "llama2-7b", "--planners",
                                    "megatron,nest,flat,mcmc", "--budget", "300", "--json"});
    ASSERT_EQ(r.exitCode, 0);
    const json root = jsonObject(r.out);
    const json results = root.value("results", json::array());
    ASSERT_EQ(results.size(), 4u);
    const Args order{"megatron", "nest", "flat", "mcmc"};
    double nestTime = 0;
    for (size_t i = 0; i < results.size(); ++i) {
        const json &row = results[i];
        for (const char *key : {"planner", "feasible", "report", "plan", "solve_time_s"})
            ASSERT_TRUE(row.contains(key)) << key;
        ASSERT_EQ(row.value("planner", ""), order[i]);
        ASSERT_TRUE(row.value("feasible", false));
        ASSERT_TRUE(row.value("solve_time_s", 0.0) >= 0);
        ASSERT_TRUE(row.value("plan", json::object()).contains("stages"));
        if (order[i] == "nest")
            nestTime = row.value("report", json::object()).value("iteration_time_s", 0.0);
    }
    ASSERT_TRUE(nestTime > 0);
    for (const json &row : results) {
        const double t = row.value("report", json::object()).value("iteration_time_s", 0.0);
        ASSERT_TRUE(t >= nestTime * (1 - 1e-9));
        ASSERT_QFUZZY_EQ(row.value("nest_ratio", 0.0), t / nestTime);
    }
}

TEST(CliCompare, compareTable)
{
    const coretest::Run r = runCli({"compare", "--cluster", "paper-v100-16", "--model", "bert-large", "--planners",
                                    "nest,megatron"});
    ASSERT_EQ(r.exitCode, 0);
    for (const char *word : {"planner", "samples/s", "iter_s", "peak_GB", "shape", "zero", "recompute",
                             "search_s", "NEST/x", "nest ", "megatron ", "tp "})
        ASSERT_TRUE(contains(r.out, word)) << word;
    // NEST's own row reads 1.000 in the ratio column.
    bool nestRow = false;
    for (const std::string &l : split(r.out, '\n'))
        if (coretest::startsWith(l, "nest "))
            nestRow = coretest::endsWith(coretest::trimmed(l), "1.000");
    ASSERT_TRUE(nestRow);
}

TEST(CliCompare, compareUsageErrors)
{
    struct Row {
        const char *name;
        Args args;
        Args fragments;
    };
    const Args base{"compare", "--cluster", "paper-v100-8", "--model", "bert-large"};
    const std::vector<Row> rows{
        {"unknown planner", base + Args{"--planners", "nest,alpa"}, {"'alpa'", "megatron", "mcmc"}},
        {"twice", base + Args{"--planners", "nest,flat,nest"}, {"'nest' twice"}},
        {"empty item", base + Args{"--planners", "nest,"}, {"--planners"}},
        {"unknown option", base + Args{"--planner", "nest"}, {"unknown option --planner"}},
        {"threads zero", base + Args{"--threads", "0"}, {"--threads"}},
        {"budget not a number", base + Args{"--budget", "many"}, {"--budget"}},
        {"efficiency below range", base + Args{"--efficiency", "1e-320"}, {"--efficiency", "0.001"}},
        {"no cluster", {"compare", "--model", "bert-large"}, {"--cluster"}},
        {"stray word", base + Args{"nest"}, {"unexpected argument 'nest'"}},
    };
    for (const Row &row : rows) {
        SCOPED_TRACE(row.name);
        [&] {
            const coretest::Run r = runCli(row.args);
            ASSERT_EQ(r.exitCode, 2);
            ASSERT_TRUE(r.out.empty());
            for (const std::string &f : row.fragments)
                ASSERT_TRUE(contains(r.err, f)) << f << " not in: " << r.err;
        }();
    }
}

TEST(CliCompare, everyCommandHasHelp)
{
    struct Row {
        std::string command;
        Args flags;
    };
    const std::vector<Row> rows{
        {"presets", {"--json"}},
        {"inspect", {"--cluster FILE|PRESET", "--model", "--seq"}},
        {"evaluate", {"--tp N", "--schedule", "--framework", "megatron-core", "--plan FILE"}},
        {"simulate", {"--out FILE", "timeline"}},
        {"plan",
         {"--planner NAME", "nest, exhaustive, flat, megatron, mcmc", "--budget N", "--seed N", "--vpp LIST",
          "default 1,2,4,8", "--workspace"}},
        {"compare", {"--planners LIST", "nest,flat,megatron,mcmc", "--threads"}},
        {"reproduce", {"--out DIR", "--quick"}},
    };
    for (const Row &row : rows) {
        SCOPED_TRACE(row.command);
        [&] {
            const coretest::Run r = runCli({row.command, "--help"});
            ASSERT_EQ(r.exitCode, 0);
            ASSERT_TRUE(r.err.empty());
            const std::string &out = r.out;
            ASSERT_TRUE(contains(out, "Usage: nest-cli " + row.command)) << out;
            ASSERT_TRUE(contains(out, "Example:\n  nest-cli " + row.command)) << out;
            ASSERT_TRUE(contains(out, "--help"));
            for (const std::string &f : row.flags)
                ASSERT_TRUE(contains(out, f)) << f << " not in:\n" << out;
            // -h is the same.
            ASSERT_EQ(runCli({row.command, "-h"}).out, r.out);
        }();
    }
}

TEST(CliCompare, versionAndTopLevelHelp)
{
    const coretest::Run v = runCli({"--version"});
    ASSERT_EQ(v.exitCode, 0);
    ASSERT_TRUE(coretest::startsWith(v.out, "nest-cli " NEST_VERSION));
    const coretest::Run h = runCli({"--help"});
    ASSERT_EQ(h.exitCode, 0);
    for (const char *c : {"compare", "reproduce", "completion", "--help"})
        ASSERT_TRUE(contains(h.out, c)) << c;
}

TEST(CliCompare, mcmcSeedIsReproducible)
{
    const Args args{"plan", "--cluster", "paper-fattree-64", "--model", "llama2-7b", "--planner", "mcmc",
                    "--budget", "250", "--json"};
    const coretest::Run a = runCli(args + Args{"--seed", "11"});
    const coretest::Run b = runCli(args + Args{"--seed", "11"});
    ASSERT_EQ(a.exitCode, 0);
    const json ja = jsonObject(a.out);
    const json jb = jsonObject(b.out);
    ASSERT_EQ(ja.value("plan", json()), jb.value("plan", json()));
    ASSERT_EQ(ja.value("planner", ""), std::string("mcmc"));
    ASSERT_EQ(ja.value("states", 0), 250);  // one state per evaluation of the budget
}

TEST(CliCompare, reproduceQuickWritesTablesAndFigures)
{
    const coretest::TempDir dir;
    const std::string out = dir.filePath("eval");
    const coretest::Run r = runCli({"reproduce", "--quick", "--out", out}, 300000);
    ASSERT_EQ(r.exitCode, 0);
    ASSERT_TRUE(contains(r.out, "NEST/megatron"));

    // Quick grid: (2 clusters x 2 models x 2 sizes + 1 V100 point) x 4 planners, 4 fixed
    // micro-batches x 4 planners, 2 memory sizes x 4 switch variants x NEST = 60 rows.
    const std::string csv = coretest::readFile(out + "/results.csv");
    ASSERT_FALSE(csv.empty());
    const std::vector<std::string> lines = split(csv, '\n', true);
    ASSERT_EQ(lines.size(), 1u + 60);
    const std::vector<std::string> header = split(lines.front(), ',');
    const int part = indexOf(header, "part"), planner = indexOf(header, "planner"),
              time = indexOf(header, "iteration_s"), feasible = indexOf(header, "feasible");
    ASSERT_TRUE(part >= 0 && planner >= 0 && time >= 0 && feasible >= 0);
    // Rows of one point are consecutive, NEST first: NEST is never slower.
    double nest = 0;
    int checked = 0;
    for (size_t i = 1; i < lines.size(); ++i) {
        const std::vector<std::string> f = split(lines[i], ',');
        ASSERT_TRUE(f.size() == header.size()) << lines[i];
        if (f[part] == "memory" || f[feasible] != "true")
            continue;
        if (f[planner] == "nest") {
            nest = toDouble(f[time]);
            continue;
        }
        ASSERT_TRUE(nest > 0);
        ASSERT_TRUE(toDouble(f[time]) >= nest * (1 - 1e-5)) << lines[i];
        ++checked;
    }
    ASSERT_EQ(checked, 13 * 3);

    const std::string text = coretest::readFile(out + "/results.md");
    ASSERT_FALSE(text.empty());
    for (const char *s : {"### Throughput, fat-tree", "### Throughput, spine-leaf", "### Throughput, v100",
                          "Geometric mean", "### Micro-batch sweep", "### Memory ablation", "NEST/megatron"})
        ASSERT_TRUE(contains(text, s)) << s;

    const char *stems[] = {"throughput-fat-tree-bert-large", "throughput-spine-leaf-llama2-7b",
                           "throughput-v100-bert-large", "microbatch-llama2-7b"};
#ifdef NEST_HAVE_FIGURES
    for (const char *stem : stems) {
        // A PNG: the signature, then the IHDR chunk with width and height (big-endian).
        const std::string p = coretest::readFile(out + "/" + stem + ".png");
        ASSERT_FALSE(p.empty()) << stem;
        ASSERT_TRUE(coretest::startsWith(p, std::string("\x89PNG\r\n\x1a\n", 8)) && p.substr(12, 4) == "IHDR");
        auto be32 = [&](size_t at) {
            return (std::uint32_t(std::uint8_t(p[at])) << 24) | (std::uint32_t(std::uint8_t(p[at + 1])) << 16) |
                   (std::uint32_t(std::uint8_t(p[at + 2])) << 8) | std::uint32_t(std::uint8_t(p[at + 3]));
        };
        ASSERT_TRUE(be32(16) >= 600 && be32(20) >= 400);
        ASSERT_TRUE(p.size() > 10000);  // lines and text, not an empty canvas
        const std::string s = coretest::readFile(out + "/" + stem + ".svg");
        ASSERT_FALSE(s.empty()) << stem;
        ASSERT_TRUE(contains(s, "<svg") && contains(s, "nest") && contains(s, "megatron"));
    }
#else
    // nest-cli without Qt: no figure at all, and stderr says where they come from.
    ASSERT_TRUE(contains(r.err, "NEST_BUILD_GUI=ON")) << r.err;
    for (const char *stem : stems)
        for (const char *ext : {".png", ".svg"})
            ASSERT_FALSE(std::filesystem::exists(out + "/" + stem + ext)) << stem << ext;
#endif
}

TEST(CliCompare, reproduceRefusesAFileAsFolder)
{
    const coretest::TempDir dir;
    ASSERT_TRUE(coretest::writeFile(dir.filePath("taken"), ""));
    const coretest::Run r = runCli({"reproduce", "--quick", "--out", dir.filePath("taken")});
    ASSERT_EQ(r.exitCode, 2);
    ASSERT_TRUE(contains(r.err, "taken") && contains(r.err, "output folder")) << r.err;
}

TEST(CliCompare, bashCompletion)
{
    const coretest::Run r = runCli({"completion", "bash"});
    ASSERT_EQ(r.exitCode, 0);
    for (const char *s : {"complete -F _nest_cli nest-cli", "compare", "reproduce", "--planners", "--budget",
                          "--cluster", "--quick"})
        ASSERT_TRUE(contains(r.out, s)) << s;
    ASSERT_EQ(runCli({"completion", "zsh"}).exitCode, 2);
}
