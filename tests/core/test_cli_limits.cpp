// The CLI's numeric flags against the documented ranges of core/support/Limits.h (issue 13), and the
// progress line of long searches, through the real binary. Every range row is derived from
// docs/reliability.md's table: one value just outside each bound is refused with exit 2, a
// message naming the flag, the value and the range; the bound itself is accepted.
#include "CoreTestSupport.h"

#include <regex>

namespace {

using coretest::contains;
using coretest::runCli;
using Args = std::vector<std::string>;

const Args kSmall{"--cluster", "paper-v100-16", "--model", "bert-large"};

Args operator+(Args a, const Args &b)
{
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

} // namespace

TEST(CliLimits, flagOutsideItsRange)
{
    struct Row {
        std::string name;
        Args args;
        Args expected;  // substrings of stderr
    };
    const auto eval = [](const Args &extra) { return Args{"evaluate"} + kSmall + extra; };
    const auto plan = [](const Args &extra) { return Args{"plan"} + kSmall + extra; };
    std::vector<Row> rows{
        // Model sizes: 16,777,216 tokens / samples (Limits.h: seqLength, batch).
        {"seq 0", eval({"--seq", "0"}), {"--seq", "at least 1", "range 1 to 16777216"}},
        {"seq 2^24+1", eval({"--seq", "16777217"}), {"--seq", "at most 16777216", "16777217"}},
        {"simulate batch 1e8", Args{"simulate"} + kSmall + Args{"--batch", "100000000"},
         {"--batch", "at most 16777216", "100000000"}},
        {"microbatch 65537", eval({"--microbatch", "65537"}), {"--microbatch", "at most 65536"}},
    };
    // Parallel degrees: at most Topology::maxDevices = 2^20.
    for (const char *flag : {"--tp", "--pp", "--dp", "--ep", "--cp"})
        rows.push_back({flag, eval({flag, "1048577"}), {flag, "at most 1048576", "1048577"}});
    const std::vector<Row> more{
        {"tp 0", eval({"--tp", "0"}), {"--tp", "at least 1"}},
        {"tp not a number", eval({"--tp", "1e3"}), {"--tp", "whole number", "'1e3'"}},
        {"interleaved:1025", eval({"--schedule", "interleaved:1025"}), {"interleaved:V", "range 1 to 1024"}},
        {"efficiency 1e-320", eval({"--efficiency", "1e-320"}), {"--efficiency", "above 0.001"}},
        {"pipeline-grad-overlap maybe", eval({"--pipeline-grad-overlap", "maybe"}),
         {"--pipeline-grad-overlap", "on or off", "'maybe'"}},
        {"grad-reduce-overlap 1", eval({"--grad-reduce-overlap", "1"}), {"--grad-reduce-overlap", "on or off", "'1'"}},
        {"grad-bucket-mb 0", eval({"--grad-bucket-mb", "0"}), {"--grad-bucket-mb", "at least 0.001"}},
        {"grad-bucket-mb 1e-300", eval({"--grad-bucket-mb", "1e-300"}), {"--grad-bucket-mb", "at least 0.001", "1e-300"}},
        {"grad-bucket-mb 2^21", eval({"--grad-bucket-mb", "2097152"}), {"--grad-bucket-mb", "at most 1048576"}},
        {"grad-bucket-mb words", eval({"--grad-bucket-mb", "lots"}), {"--grad-bucket-mb", "number of MiB", "'lots'"}},
        {"optimizer-dtype fp16", eval({"--optimizer-dtype", "fp16"}), {"--optimizer-dtype", "fp32, bf16 or bf16-moments", "'fp16'"}},
        {"grad-accum-dtype fp8", eval({"--grad-accum-dtype", "fp8"}),
         {"--grad-accum-dtype", "fp32, bf16 or fp16", "'fp8'"}},
        // Search flags.
        {"max-stages 1e9", plan({"--max-stages", "1000000000"}), {"--max-stages", "at most 100000"}},
        {"microbatch list", plan({"--microbatch", "1,70000"}), {"--microbatch", "70000"}},
        {"cp list", plan({"--cp", "2,2000000"}), {"--cp", "at most 65536"}},
        {"vpp 65", plan({"--vpp", "1,65"}), {"--vpp", "at most 64"}},
        {"budget 0", plan({"--planner", "mcmc", "--budget", "0"}), {"--budget", "at least 1"}},
        {"budget 2e8", plan({"--planner", "mcmc", "--budget", "200000000"}), {"--budget", "at most 100000000"}},
        {"headroom 0.995", plan({"--memory-headroom", "0.995"}), {"--memory-headroom", "at most 0.99"}},
        {"threads 1025", Args{"compare"} + kSmall + Args{"--threads", "1025"}, {"--threads", "at most 1024"}},
        {"inspect seq", {"inspect", "--model", "bert-large", "--seq", "16777217"}, {"--seq", "at most 16777216"}},
    };
    rows.insert(rows.end(), more.begin(), more.end());
    for (const Row &row : rows) {
        SCOPED_TRACE(row.name);
        [&] {
            const coretest::Run r = runCli(row.args);
            ASSERT_EQ(r.exitCode, 2);
            ASSERT_TRUE(r.out.empty()) << r.out;
            for (const std::string &s : row.expected)
                ASSERT_TRUE(contains(r.err, s)) << s << " not in: " << r.err;
        }();
    }
}

TEST(CliLimits, workspaceAndFlagRefuseTheSameValues)
{
    // Issue 52: a search setting has one range, read by the workspace loader and by the flag
    // that overrides it. Each row: the first value outside the range (the numbers of
    // docs/reliability.md's table), refused with exit 2 both from a workspace file (the
    // message names the JSON key) and from the flag (the message names the flag).
    struct Row {
        std::string key;       // in the workspace's "search" object
        nlohmann::json value;  // just outside the range
        Args flag;             // the same value as a flag
        std::string bound;     // what the messages say
    };
    const std::vector<Row> rows{
        {"max_stages", 100001, {"--max-stages", "100001"}, "100000"},
        {"memory_headroom", 0.995, {"--memory-headroom", "0.995"}, "0.99"},
        {"seed", 2147483648LL, {"--planner", "mcmc", "--seed", "2147483648"}, "2147483647"},
        {"top_k", 101, {"--top", "101"}, "100"},
        {"mcmc_budget", 100000001, {"--planner", "mcmc", "--budget", "100000001"}, "100000000"},
        {"micro_batches", {1, 65537}, {"--microbatch", "1,65537"}, "65536"},
        {"ep_candidates", {1, 65537}, {"--ep", "1,65537"}, "65536"},
        {"cp_candidates", {1, 65537}, {"--cp", "1,65537"}, "65536"},
    };
    const coretest::TempDir dir;
    const nlohmann::json quickstart =
        coretest::jsonObject(coretest::readFile(coretest::sample("sample_configs/workspaces/quickstart.nestws.json")));
    ASSERT_TRUE(quickstart.is_object());
    for (const Row &row : rows) {
        SCOPED_TRACE(row.key);
        nlohmann::json ws = quickstart;
        ws["search"][row.key] = row.value;
        const std::string file = dir.filePath(row.key + ".nestws.json");
        ASSERT_TRUE(coretest::writeFile(file, ws.dump(1)));
        const coretest::Run fromFile = runCli({"plan", "--workspace", file});
        EXPECT_EQ(fromFile.exitCode, 2) << fromFile.err;
        EXPECT_TRUE(contains(fromFile.err, row.key)) << fromFile.err;
        EXPECT_TRUE(contains(fromFile.err, row.bound)) << fromFile.err;
        const coretest::Run fromFlag = runCli(Args{"plan"} + kSmall + row.flag);
        EXPECT_EQ(fromFlag.exitCode, 2) << fromFlag.err;
        const std::string flag = row.flag[row.flag.size() - 2];
        EXPECT_TRUE(contains(fromFlag.err, flag)) << fromFlag.err;
        EXPECT_TRUE(contains(fromFlag.err, row.bound)) << fromFlag.err;
    }
}

TEST(CliLimits, flagsAtTheirBoundsPass)
{
    // The bounds themselves are inside: a refusal here would come from the range, not the
    // model (bert-large has 16 heads; the batch is divisible by the micro-batch).
    coretest::Run r = runCli(Args{"evaluate"} + kSmall + Args{"--tp", "1", "--dp", "16", "--seq", "512"});
    ASSERT_EQ(r.exitCode, 0);
    r = runCli(Args{"plan"} + kSmall +
               Args{"--max-stages", "0", "--memory-headroom", "0.99", "--vpp", "1,64", "--json"});
    // 0.99 headroom leaves 1 % of a V100 (0.34 GB): the search may find nothing, but the
    // flags themselves are accepted (exit 2 would then say "no plan found", not a range).
    ASSERT_TRUE(!contains(r.err, "range")) << r.err;
    ASSERT_TRUE(r.exitCode == 0 || contains(r.err, "no plan found"));
}

TEST(CliLimits, progressOnlyWhenAsked)
{
    // A search of about two seconds (a 260-layer GPT on 64 devices): with --progress the
    // line is on stderr, every line has a percentage and a time left, stdout stays
    // machine-readable; without it (stderr is a pipe, not a terminal) stderr stays empty.
    const coretest::TempDir dir;
    const std::string source = coretest::readFile(coretest::sample("sample_configs/models/gpt3-35b.json"));
    ASSERT_FALSE(source.empty());
    nlohmann::json model = coretest::jsonObject(source);
    model["layers"] = 260;
    model["name"] = "deep";
    const std::string file = dir.filePath("deep.json");
    ASSERT_TRUE(coretest::writeFile(file, model.dump(4)));

    const Args args{"plan", "--cluster", "paper-fattree-64", "--model", file, "--json"};
    const coretest::Run quiet = runCli(args);
    ASSERT_EQ(quiet.exitCode, 0);
    ASSERT_EQ(quiet.err, std::string());
    const double solve = coretest::jsonObject(quiet.out).value("solve_time_s", 0.0);

    const coretest::Run loud = runCli(args + Args{"--progress"});
    ASSERT_EQ(loud.exitCode, 0);
    ASSERT_TRUE(coretest::isJsonObject(loud.out));
    if (solve < 1.2)  // progress starts after one second; a fast machine may finish first
        GTEST_SKIP() << "the search finished within the quiet second";
    const std::vector<std::string> lines = coretest::split(coretest::trimmed(loud.err), '\n');
    ASSERT_TRUE(!lines.empty());
    static const std::regex line(
        R"(^plan: \[[#.]{20}\] \d+ %, \d+ s, (~\d+ (s|min|h) left( \(estimate\))?|time left unknown))");
    double lastPct = -1;
    for (const std::string &l : lines) {
        ASSERT_TRUE(std::regex_search(l, line)) << l;
        const std::string::size_type at = l.find("] ");
        const std::string from = at == std::string::npos ? l : l.substr(at + 2);
        const double pct = std::atof(from.substr(0, from.find(' ')).c_str());
        ASSERT_TRUE(pct >= lastPct) << l;  // never goes back
        lastPct = pct;
    }
}
