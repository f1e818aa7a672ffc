// The error band of every reported time (issue 50, point 3), through the real nest-cli:
// evaluate, plan, compare and simulate give "error_band": {"basis", "low_s", "high_s"}, the
// band's bounds on the time it accompanies; the text outputs print the same bounds; a plan
// file carries it and an old plan file without it still loads. The bounds are checked against
// the committed table core/cost/ModelErrorBandTable.inc, read here by its own parser (the cell
// the basis names, after the fallback the basis states).
#include "SourceDir.h"
#include "JsonUtil.h"

#include "CoreTestSupport.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>

using nest::Json;

namespace {

using coretest::runCli;

const std::string kCluster = NEST_SOURCE_DIR "/sample_configs/clusters/paper-spineleaf-64.json";

struct Cell {
    double low = 0, high = 0;
};

// The cell (framework, stack, scale; "" = any) of the committed table, or none.
std::optional<Cell> tableCell(const std::string &fw, const std::string &stack, const std::string &scale)
{
    std::ifstream in(NEST_SOURCE_DIR "/core/cost/ModelErrorBandTable.inc");
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    const std::regex row(R"re(\{"([^"]*)", "([^"]*)", "([^"]*)", (\d+), ([0-9.]+), ([0-9.]+)\})re");
    for (auto it = std::sregex_iterator(s.begin(), s.end(), row); it != std::sregex_iterator(); ++it) {
        const std::smatch &m = *it;
        if (m[1] == fw && m[2] == stack && m[3] == scale)
            return Cell{std::stod(m[5]), std::stod(m[6])};
    }
    return std::nullopt;
}

// The cell an uncalibrated basis names: "FW STACK, SCALE GPUs, uncalibrated[, band of all ...]".
std::optional<Cell> cellOfBasis(const std::string &basis)
{
    const std::regex re(R"re(^(\S+) (\S+), (\S+) GPUs, uncalibrated(, band of all (.*)rows)?$)re");
    std::smatch m;
    if (!std::regex_match(basis, m, re))
        return std::nullopt;
    const std::string fw = m[1], stack = m[2], scale = m[3], all = m[5];
    if (!m[4].matched)
        return tableCell(fw, stack, scale);
    // A fallback: the cell it skipped must be missing from the table.
    EXPECT_FALSE(tableCell(fw, stack, scale).has_value()) << basis;
    if (all == fw + " " + stack + " ")
        return tableCell(fw, stack, "");
    if (all == stack + " ")
        return tableCell("", stack, "");
    if (all.empty())
        return tableCell("", "", "");
    return std::nullopt;
}

void expectBounds(const Json &band, double seconds, const char *what)
{
    ASSERT_TRUE(band.is_object()) << what << ": " << band.dump();
    ASSERT_EQ(band.size(), 3u) << what << ": " << band.dump();   // basis, low_s, high_s: nothing else
    const std::string basis = band.at("basis").get<std::string>();
    const std::optional<Cell> cell = cellOfBasis(basis);
    ASSERT_TRUE(cell.has_value()) << what << ": no table cell for '" << basis << "'";
    // The table keeps 3 decimals; the CLI multiplies the same numbers.
    EXPECT_NEAR(band.at("low_s").get<double>(), cell->low * seconds, 1e-9 * seconds) << what;
    EXPECT_NEAR(band.at("high_s").get<double>(), cell->high * seconds, 1e-9 * seconds) << what;
    EXPECT_LE(band.at("low_s").get<double>(), band.at("high_s").get<double>()) << what;
}

// "13.8-29.9 s" of the text output, as numbers.
std::optional<std::pair<double, double>> textBounds(const std::string &out, const std::string &prefix)
{
    const std::regex re(prefix + R"re(.*?\(.*?([0-9.]+)-([0-9.]+) s, ([^;)]*))re");
    std::smatch m;
    if (!std::regex_search(out, m, re))
        return std::nullopt;
    return std::make_pair(std::stod(m[1]), std::stod(m[2]));
}

} // namespace

TEST(CliErrorBand, evaluatePlanSimulateAndCompareGiveTheBoundsOfTheirTime)
{
    const coretest::TempDir dir;
    const std::string planFile = dir.filePath("plan.json");
    const coretest::Run plan = runCli({"plan", "--cluster", kCluster, "--model", "llama2-7b", "--json", "--top", "2",
                                       "--out", planFile});
    ASSERT_EQ(plan.exitCode, 0) << plan.err;
    const Json p = Json::parse(plan.out);
    const double t = p.at("report").at("iteration_time_s").get<double>();
    expectBounds(p.at("error_band"), t, "plan");
    EXPECT_EQ(p.at("error_band").at("basis").get<std::string>().find("megatron-core "), 0u);
    EXPECT_NE(p.at("error_band").at("basis").get<std::string>().find(", <=64 GPUs, "), std::string::npos)
        << "64 GPUs are in the <=64 bucket";
    ASSERT_EQ(p.at("top").size(), 2u);
    for (const Json &row : p.at("top"))
        expectBounds(row.at("error_band"), row.at("report").at("iteration_time_s").get<double>(), "plan --top");

    // The plan file carries the band of its time; evaluate reads it back and prices it again.
    const auto saved = nest::readJsonFile(planFile);
    ASSERT_TRUE(saved.ok());
    ASSERT_TRUE(saved->contains("error_band"));
    EXPECT_EQ((*saved)["error_band"], p.at("error_band"));
    const coretest::Run ev = runCli({"evaluate", "--cluster", kCluster, "--model", "llama2-7b", "--plan", planFile,
                                     "--json"});
    ASSERT_EQ(ev.exitCode, 0) << ev.err;
    const Json e = Json::parse(ev.out);
    EXPECT_EQ(e.at("iteration_time_s").get<double>(), t);
    expectBounds(e.at("error_band"), t, "evaluate");

    // An old plan file without the key loads and prices the same.
    Json old = *saved;
    old.erase("error_band");
    const std::string oldFile = dir.filePath("old.json");
    ASSERT_TRUE(nest::writeJsonFile(oldFile, old).ok());
    const coretest::Run evOld = runCli({"evaluate", "--cluster", kCluster, "--model", "llama2-7b", "--plan", oldFile,
                                        "--json"});
    ASSERT_EQ(evOld.exitCode, 0) << evOld.err;
    EXPECT_EQ(Json::parse(evOld.out).at("error_band"), e.at("error_band"));
    // A band that is not an object is refused with its path.
    Json bad = *saved;
    bad["error_band"] = 3;
    const std::string badFile = dir.filePath("bad.json");
    ASSERT_TRUE(nest::writeJsonFile(badFile, bad).ok());
    const coretest::Run evBad = runCli({"evaluate", "--cluster", kCluster, "--model", "llama2-7b", "--plan", badFile});
    EXPECT_EQ(evBad.exitCode, 2);
    EXPECT_NE(evBad.err.find("error_band"), std::string::npos) << evBad.err;

    // The text prints the same bounds (3 significant digits of the upper one).
    const coretest::Run evText = runCli({"evaluate", "--cluster", kCluster, "--model", "llama2-7b", "--plan", planFile});
    ASSERT_EQ(evText.exitCode, 0) << evText.err;
    const auto shown = textBounds(evText.out, "iteration time:");
    ASSERT_TRUE(shown.has_value()) << evText.out;
    const double high = e.at("error_band").at("high_s").get<double>();
    const double unit = std::pow(10.0, std::floor(std::log10(high)) - 2);   // the last digit printed
    EXPECT_NEAR(shown->first, e.at("error_band").at("low_s").get<double>(), unit / 2 + 1e-12) << evText.out;
    EXPECT_NEAR(shown->second, high, unit / 2 + 1e-12) << evText.out;
    EXPECT_NE(evText.out.find(e.at("error_band").at("basis").get<std::string>()), std::string::npos) << evText.out;

    // simulate: the bounds of the simulated total.
    const coretest::Run sim = runCli({"simulate", "--cluster", kCluster, "--model", "llama2-7b", "--plan", planFile,
                                      "--json"});
    ASSERT_EQ(sim.exitCode, 0) << sim.err;
    const Json s = Json::parse(sim.out);
    expectBounds(s.at("error_band"), s.at("makespan_s").get<double>(), "simulate");
    const coretest::Run simText = runCli({"simulate", "--cluster", kCluster, "--model", "llama2-7b", "--plan", planFile});
    ASSERT_EQ(simText.exitCode, 0) << simText.err;
    EXPECT_TRUE(textBounds(simText.out, "makespan:").has_value()) << simText.out;

    // compare: per result row the bounds of that row's time; the top level holds NEST's.
    const coretest::Run cmp = runCli({"compare", "--cluster", kCluster, "--model", "llama2-7b", "--json",
                                      "--planners", "nest,megatron"});
    ASSERT_EQ(cmp.exitCode, 0) << cmp.err;
    const Json c = Json::parse(cmp.out);
    double nest = 0;
    for (const Json &row : c.at("results")) {
        ASSERT_TRUE(row.at("feasible").get<bool>()) << row.dump();
        const double time = row.at("report").at("iteration_time_s").get<double>();
        expectBounds(row.at("error_band"), time, "compare row");
        if (row.at("planner") == "nest")
            nest = time;
    }
    ASSERT_GT(nest, 0);
    expectBounds(c.at("error_band"), nest, "compare");
}

TEST(CliErrorBand, oneRunCalibrationNarrowsTheBandToOneSourcesScatter)
{
    // One run, one parameter fitted: its residual is zero by construction, the band is the
    // validation rows' scatter within one source (the "kWithinSource" line of the table).
    const coretest::TempDir dir;
    const std::string cal = dir.filePath("cal.json");
    ASSERT_TRUE(nest::writeJsonFile(cal, Json::parse(R"({"format": "nest-calibration", "version": 1,
        "parameters": {"a100-80gb/megatron-core": {"step_overhead": 0.1}},
        "runs": [{"name": "a", "measured_s": 12.0, "before_s": 11.0, "after_s": 12.0}]})")).ok());
    const std::string cluster = dir.filePath("a100.json");
    ASSERT_TRUE(nest::writeJsonFile(cluster, Json::parse(R"({"name": "a100x16", "device": "a100-80gb",
        "levels": [{"name": "node", "fanout": 8, "bandwidth_GBps": 300},
                   {"name": "cluster", "fanout": 2, "bandwidth_GBps": 25}]})")).ok());
    const coretest::Run ev = runCli({"plan", "--cluster", cluster, "--model", "llama2-7b", "--calibration", cal,
                                     "--json"});
    ASSERT_EQ(ev.exitCode, 0) << ev.err;
    const Json j = Json::parse(ev.out);
    const Json &band = j.at("error_band");
    EXPECT_EQ(band.at("basis").get<std::string>(), "calibrated (1 run), band of one source's scatter");
    std::ifstream in(NEST_SOURCE_DIR "/core/cost/ModelErrorBandTable.inc");
    std::stringstream text;
    text << in.rdbuf();
    std::smatch m;
    const std::string s = text.str();
    ASSERT_TRUE(std::regex_search(s, m, std::regex(R"re(kWithinSource = \{"", "", "", \d+, ([0-9.]+), ([0-9.]+)\})re")));
    const double t = j.at("report").at("iteration_time_s").get<double>();
    EXPECT_NEAR(band.at("low_s").get<double>(), std::stod(m[1]) * t, 1e-9 * t);
    EXPECT_NEAR(band.at("high_s").get<double>(), std::stod(m[2]) * t, 1e-9 * t);
}
