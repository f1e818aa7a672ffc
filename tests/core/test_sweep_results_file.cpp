// The results file of nest_planner.sweep() as the window reads it (core/studies/SweepResultsFile):
// records, a line cut short, errors naming the line, the axes the chart can use, and the
// reduction to the best throughput over the keywords that are not drawn. Expected values are
// the hand-written numbers of the file below.
#include "SweepResultsFile.h"

#include "CoreTestSupport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace {

std::string record(const std::string &model, int batch, const std::string &framework, double samples)
{
    return R"({"id": "x", "point": {"model": ")" + model + R"(", "batch": )" + std::to_string(batch) +
           R"(, "framework": ")" + framework + R"("}, "ok": true, "result": {"report": {"throughput_samples_per_s": )" +
           std::to_string(samples) + R"(, "iteration_time_s": 2.0, "mfu": 0.5}}})";
}

std::string failed(const std::string &model, int batch, const std::string &framework)
{
    return R"({"id": "y", "point": {"model": ")" + model + R"(", "batch": )" + std::to_string(batch) +
           R"(, "framework": ")" + framework + R"("}, "ok": false, "error": "no plan found"})";
}

} // namespace

TEST(SweepResultsFile, readsRecordsAndSkipsALineCutShort)
{
    coretest::TempDir dir;
    const std::string file = dir.filePath("r.jsonl");
    const std::string text = record("a", 32, "mc", 10) + "\n" + record("a", 64, "mc", 20) + "\n" +
                             record("a", 32, "ds", 12) + "\n" + record("a", 64, "ds", 18) + "\n" +
                             record("b", 32, "mc", 5) + "\n" + failed("b", 64, "mc") + "\n" +
                             record("b", 32, "ds", 4) + "\n" + record("b", 64, "ds", 9) + "\n" +
                             record("b", 64, "ds", 7).substr(0, 40);  // the writer was killed here
    ASSERT_TRUE(coretest::writeFile(file, text));
    const auto f = nest::loadSweepResults(file);
    ASSERT_TRUE(f) << f.error();
    EXPECT_EQ(f->records.size(), 8u);
    EXPECT_EQ(f->skippedLines, 1);
    EXPECT_EQ(f->keys, (std::vector<std::string>{"batch", "framework", "model"}));  // as nlohmann orders them
    EXPECT_EQ(f->varying, (std::vector<std::string>{"batch", "framework", "model"}));
    EXPECT_EQ(nest::numericVaryingKeys(*f), std::vector<std::string>{"batch"});
    EXPECT_FALSE(f->records[5].ok);
    EXPECT_EQ(f->records[5].error, "no plan found");
    EXPECT_DOUBLE_EQ(f->records[1].samplesPerSecond, 20);

    // x = batch, one line per model, the best framework at each point: by hand,
    // a: 32 -> max(10, 12) = 12, 64 -> max(20, 18) = 20; b: 32 -> max(5, 4) = 5, 64 -> 9 (mc failed).
    const auto c = nest::sweepChart(*f, "batch", "model");
    ASSERT_TRUE(c) << c.error();
    EXPECT_EQ(c->reducedOver, std::vector<std::string>{"framework"});
    ASSERT_EQ(c->series.size(), 2u);
    EXPECT_EQ(c->series[0].name, "model=a");
    EXPECT_EQ(c->series[0].x, (std::vector<double>{32, 64}));
    EXPECT_EQ(c->series[0].y, (std::vector<double>{12, 20}));
    EXPECT_EQ(c->series[1].y, (std::vector<double>{5, 9}));
    // One line per framework, the best model: mc 32 -> 10, 64 -> 20; ds 32 -> 12, 64 -> 18.
    const auto byFramework = nest::sweepChart(*f, "batch", "framework");
    ASSERT_TRUE(byFramework);
    EXPECT_EQ(byFramework->series[0].y, (std::vector<double>{10, 20}));
    EXPECT_EQ(byFramework->series[1].y, (std::vector<double>{12, 18}));
    // The defaults: the numeric keyword, then the first other varying one.
    const auto d = nest::sweepChart(*f);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->xKey, "batch");
    EXPECT_EQ(d->seriesKey, "framework");
    EXPECT_FALSE(nest::sweepChart(*f, "model", ""));
    EXPECT_FALSE(nest::sweepChart(*f, "batch", "batch"));
}

TEST(SweepResultsFile, aFailedPointHasNoValue)
{
    coretest::TempDir dir;
    const std::string file = dir.filePath("r.jsonl");
    ASSERT_TRUE(coretest::writeFile(file, failed("a", 32, "mc") + "\n" + record("a", 64, "mc", 3) + "\n"));
    const auto c = nest::sweepChart(*nest::loadSweepResults(file));
    ASSERT_TRUE(c) << c.error();
    ASSERT_EQ(c->series.size(), 1u);
    EXPECT_TRUE(std::isnan(c->series[0].y[0]));
    EXPECT_EQ(c->series[0].y[1], 3);
}

TEST(SweepResultsFile, errorsNameTheFileTheLineAndThePath)
{
    coretest::TempDir dir;
    const std::string file = dir.filePath("bad.jsonl");
    ASSERT_TRUE(coretest::writeFile(file, record("a", 32, "mc", 1) + "\n" +
                                              R"({"point": {"batch": 1}, "ok": true, "result": {"report": {"throughput_samples_per_s": -1, "iteration_time_s": 1}}})"));
    auto f = nest::loadSweepResults(file);
    ASSERT_FALSE(f);
    EXPECT_NE(f.error().find(file + ": line 2: at result.report.throughput_samples_per_s: must not be negative"), std::string::npos) << f.error();
    ASSERT_TRUE(coretest::writeFile(file, "[1, 2]\n"));
    f = nest::loadSweepResults(file);
    ASSERT_FALSE(f);
    EXPECT_NE(f.error().find("line 1"), std::string::npos) << f.error();
    ASSERT_TRUE(coretest::writeFile(file, "\n\n"));
    f = nest::loadSweepResults(file);
    ASSERT_FALSE(f);
    EXPECT_NE(f.error().find("no sweep results"), std::string::npos) << f.error();
    EXPECT_FALSE(nest::loadSweepResults(dir.filePath("missing.jsonl")));
}
