// `nest-cli plan` candidate lists (issue 10, item 4): --cp 1,2,4 (taken as given),
// --vpp 1,2,3 (1 = the plain schedules, >= 2 = interleaving depths) and
// --recompute none,selective,full; the settings they produce, the plans honouring them, the
// same plan as a workspace holding those settings, and the usage errors (exit 2, naming the
// option and the bad item). `evaluate --recompute MODE` keeps its single value.
#include "JsonUtil.h"
#include "SearchSettings.h"

#include <QTemporaryDir>
#include <QtTest>

#include "CliTestSupport.h"

using clitest::Run;
using clitest::runCli;
using nest::Json;

namespace {

// 8 V100 (2 per node), Llama-2 7B at 1024 tokens, 16 sequences: plans in ~0.1 s.
const QStringList kSmall{"--cluster", "paper-v100-8", "--model", "llama2-7b", "--batch", "16", "--seq", "1024"};

Json outJson(const Run &r)
{
    return Json::parse(r.out.toStdString(), nullptr, false);
}

Run plan(const QStringList &extra)
{
    return runCli(QStringList{"plan"} + kSmall + extra + QStringList{"--json"});
}

std::vector<std::string> strings(const Json &list)
{
    std::vector<std::string> out;
    for (const Json &v : list)
        out.push_back(v.get<std::string>());
    return out;
}

} // namespace

class TestCliSearchLists : public QObject {
    Q_OBJECT
private slots:
    void listsReachTheSettings();
    void plansHonourTheLists_data();
    void plansHonourTheLists();
    void flagsEqualWorkspaceSettings();
    void longSequenceDefaultsUseContextParallelism();
    void noRecomputeStillWorks();
    void evaluateTakesOneMode();
    void badItems_data();
    void badItems();
    void usageMentionsTheLists();
};

void TestCliSearchLists::listsReachTheSettings()
{
    const Run r = plan({"--cp", "1,2", "--vpp", "1,3,4", "--recompute", "none,selective"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const Json s = outJson(r).at("search");
    QCOMPARE(s.at("cp_candidates"), Json::array({1, 2}));
    QCOMPARE(s.at("cp_min_tokens_per_rank").get<int>(), 0);  // an explicit list is taken as given
    QCOMPARE(s.at("virtual_stages"), Json::array({3, 4}));
    QCOMPARE(strings(s.at("schedules")), (std::vector<std::string>{"1f1b", "gpipe", "interleaved"}));
    QCOMPARE(strings(s.at("recompute_modes")), (std::vector<std::string>{"none", "selective"}));
    QVERIFY(s.at("allow_recompute").get<bool>());

    // Without the flags: the defaults.
    const Run d = plan({});
    QVERIFY2(d.exitCode == 0, d.err.constData());
    const Json ds = outJson(d).at("search");
    QCOMPARE(ds.at("cp_candidates"), Json::array({1, 2, 4, 8, 16}));
    QCOMPARE(ds.at("cp_min_tokens_per_rank").get<int>(), 4096);
    QCOMPARE(ds.at("virtual_stages"), Json::array({2, 3, 4}));
    QCOMPARE(strings(ds.at("recompute_modes")), (std::vector<std::string>{"none", "selective", "full"}));

    // --vpp without 1: interleaved only; --vpp 1 alone: no interleaving.
    const Json only = outJson(plan({"--vpp", "3"})).at("search");
    QCOMPARE(strings(only.at("schedules")), (std::vector<std::string>{"interleaved"}));
    QCOMPARE(only.at("virtual_stages"), Json::array({3}));
    const Json plain = outJson(plan({"--vpp", "1"})).at("search");
    QCOMPARE(strings(plain.at("schedules")), (std::vector<std::string>{"1f1b", "gpipe"}));
}

void TestCliSearchLists::plansHonourTheLists_data()
{
    QTest::addColumn<QStringList>("flags");
    QTest::addColumn<QList<int>>("cps");            // allowed cp of every stage
    QTest::addColumn<QStringList>("modes");         // allowed recompute of every stage
    QTest::addColumn<QList<int>>("depths");         // allowed virtual stages of the plan (1 = plain)
    QTest::newRow("interleaved depth 3 only") << QStringList{"--vpp", "3"} << QList<int>{1, 2, 4, 8, 16}
                                              << QStringList{"none", "selective", "full"} << QList<int>{3};
    QTest::newRow("depth 4 or plain, cp 2") << QStringList{"--vpp", "4,1", "--cp", "2"} << QList<int>{2}
                                            << QStringList{"none", "selective", "full"} << QList<int>{1, 4};
    QTest::newRow("full recompute only") << QStringList{"--recompute", "full"} << QList<int>{1, 2, 4, 8, 16}
                                         << QStringList{"full"} << QList<int>{1, 2, 3, 4};
    QTest::newRow("selective only, cp 1") << QStringList{"--recompute", "selective", "--cp", "1"} << QList<int>{1}
                                          << QStringList{"selective"} << QList<int>{1, 2, 3, 4};
}

void TestCliSearchLists::plansHonourTheLists()
{
    QFETCH(QStringList, flags);
    QFETCH(QList<int>, cps);
    QFETCH(QStringList, modes);
    QFETCH(QList<int>, depths);
    const Run r = plan(flags);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const Json j = outJson(r);
    QVERIFY(j.at("verified").get<bool>());
    const Json &p = j.at("plan");
    QVERIFY2(depths.contains(p.at("virtual_stages").get<int>()), p.dump().c_str());
    if (p.at("virtual_stages").get<int>() > 1)
        QCOMPARE(p.at("schedule").get<std::string>(), std::string("interleaved"));
    for (const Json &st : p.at("stages")) {
        QVERIFY2(cps.contains(st.at("cp").get<int>()), st.dump().c_str());
        QVERIFY2(modes.contains(QString::fromStdString(st.at("recompute").get<std::string>())), st.dump().c_str());
    }
}

void TestCliSearchLists::flagsEqualWorkspaceSettings()
{
    // The flags say what a workspace's search object says: the same settings, the same plan.
    QTemporaryDir dir;
    const QString ws = dir.filePath("lists.nestws.json");
    const Json workspace{{"format", "nest-workspace"},
                         {"version", 1},
                         {"cluster", {{"template", "paper-v100"}, {"params", {{"devices", 8}}}}},
                         {"model", {{"preset", "llama2-7b"}, {"seq_length", 1024}, {"global_batch", 16}}},
                         {"search",
                          {{"cp_candidates", {1, 2}},
                           {"cp_min_tokens_per_rank", 0},
                           {"virtual_stages", {3}},
                           {"schedules", {"1f1b", "gpipe", "interleaved"}},
                           {"recompute_modes", {"selective", "full"}}}}};
    QVERIFY(nest::writeJsonFile(ws.toStdString(), workspace));
    const Run viaWorkspace = runCli({"plan", "--workspace", ws, "--json"});
    QVERIFY2(viaWorkspace.exitCode == 0, viaWorkspace.err.constData());
    const Run viaFlags = plan({"--cp", "1,2", "--vpp", "1,3", "--recompute", "selective,full"});
    QVERIFY2(viaFlags.exitCode == 0, viaFlags.err.constData());
    const Json a = outJson(viaWorkspace), b = outJson(viaFlags);
    QCOMPARE(a.at("search").dump(), b.at("search").dump());
    QCOMPARE(a.at("plan").dump(), b.at("plan").dump());
    QCOMPARE(a.at("report").at("iteration_time_s").get<double>(), b.at("report").at("iteration_time_s").get<double>());
    // And the flags override a workspace's lists.
    const Run over = runCli({"plan", "--workspace", ws, "--json", "--recompute", "none", "--vpp", "1"});
    QVERIFY2(over.exitCode == 0, over.err.constData());
    const Json os = outJson(over).at("search");
    QCOMPARE(strings(os.at("recompute_modes")), (std::vector<std::string>{"none"}));
    QCOMPARE(strings(os.at("schedules")), (std::vector<std::string>{"1f1b", "gpipe"}));
    QCOMPARE(os.at("cp_candidates"), Json::array({1, 2}));  // not given: the workspace's
}

void TestCliSearchLists::longSequenceDefaultsUseContextParallelism()
{
    // 131072 tokens: the default cp list reaches 16 (8192 tokens per rank); without
    // context parallelism (--cp 1) the best plan is slower.
    const QStringList base{"plan", "--cluster", "paper-spineleaf-64", "--model", "llama3-70b", "--seq", "131072",
                           "--batch", "2", "--json"};
    const Run withCp = runCli(base);
    const Run noCp = runCli(base + QStringList{"--cp", "1"});
    QVERIFY2(withCp.exitCode == 0, withCp.err.constData());
    QVERIFY2(noCp.exitCode == 0, noCp.err.constData());
    const Json a = outJson(withCp), b = outJson(noCp);
    int maxCp = 1;
    for (const Json &st : a.at("plan").at("stages"))
        maxCp = std::max(maxCp, st.at("cp").get<int>());
    QVERIFY(maxCp > 1);
    for (const Json &st : b.at("plan").at("stages"))
        QCOMPARE(st.at("cp").get<int>(), 1);
    QVERIFY(a.at("report").at("iteration_time_s").get<double>() < b.at("report").at("iteration_time_s").get<double>());
}

void TestCliSearchLists::noRecomputeStillWorks()
{
    const Run r = plan({"--no-recompute", "--vpp", "1,2"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const Json j = outJson(r);
    QVERIFY(!j.at("search").at("allow_recompute").get<bool>());
    for (const Json &st : j.at("plan").at("stages"))
        QCOMPARE(st.at("recompute").get<std::string>(), std::string("none"));
}

void TestCliSearchLists::evaluateTakesOneMode()
{
    const QStringList base = QStringList{"evaluate"} + kSmall + QStringList{"--tp", "2", "--pp", "4", "--json"};
    double times[3] = {0, 0, 0};
    int i = 0;
    for (const char *mode : {"none", "selective", "full"}) {
        const Run r = runCli(base + QStringList{"--recompute", mode});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        times[i++] = outJson(r).at("iteration_time_s").get<double>();
    }
    // Recomputation costs time: the three modes are three different plans.
    QVERIFY(times[0] < times[1]);
    QVERIFY(times[1] < times[2]);
    const Run list = runCli(base + QStringList{"--recompute", "none,full"});
    QCOMPARE(list.exitCode, 2);
    QVERIFY2(list.err.contains("--recompute") && list.err.contains("none,full"), list.err.constData());
}

void TestCliSearchLists::badItems_data()
{
    QTest::addColumn<QStringList>("flags");
    QTest::addColumn<QStringList>("fragments");  // each must appear in the message
    QTest::newRow("cp not a number") << QStringList{"--cp", "1,x"} << QStringList{"--cp", "'x'"};
    QTest::newRow("cp 0") << QStringList{"--cp", "0"} << QStringList{"--cp", "'0'"};
    QTest::newRow("cp empty item") << QStringList{"--cp", "1,,2"} << QStringList{"--cp", "''"};
    QTest::newRow("cp twice") << QStringList{"--cp", "2,4,2"} << QStringList{"--cp", "2 twice"};
    QTest::newRow("cp not dividing the sequence") << QStringList{"--cp", "1,3"}
                                                  << QStringList{"--cp", "3 does not divide", "1024"};
    QTest::newRow("vpp 0") << QStringList{"--vpp", "1,0"} << QStringList{"--vpp", "'0'"};
    QTest::newRow("vpp above 64") << QStringList{"--vpp", "2,65"} << QStringList{"--vpp", "65"};
    QTest::newRow("vpp twice") << QStringList{"--vpp", "3,1,3"} << QStringList{"--vpp", "3 twice"};
    QTest::newRow("vpp 1 twice") << QStringList{"--vpp", "1,1"} << QStringList{"--vpp", "1 twice"};
    QTest::newRow("vpp not a number") << QStringList{"--vpp", "two"} << QStringList{"--vpp", "'two'"};
    QTest::newRow("recompute unknown") << QStringList{"--recompute", "none,partial"}
                                       << QStringList{"--recompute", "'partial'", "selective"};
    QTest::newRow("recompute empty item") << QStringList{"--recompute", "none,"} << QStringList{"--recompute", "''"};
    QTest::newRow("recompute twice") << QStringList{"--recompute", "full,none,full"}
                                     << QStringList{"--recompute", "'full' twice"};
    QTest::newRow("recompute and no-recompute") << QStringList{"--recompute", "full", "--no-recompute"}
                                                << QStringList{"--recompute", "--no-recompute"};
    QTest::newRow("layout option") << QStringList{"--tp", "2"} << QStringList{"unknown option --tp"};
}

void TestCliSearchLists::badItems()
{
    QFETCH(QStringList, flags);
    QFETCH(QStringList, fragments);
    const Run r = plan(flags);
    QCOMPARE(r.exitCode, 2);
    QVERIFY(r.out.isEmpty());
    for (const QString &f : fragments)
        QVERIFY2(r.err.contains(f.toUtf8()), qPrintable(f + " not in: " + QString::fromUtf8(r.err)));
}

void TestCliSearchLists::usageMentionsTheLists()
{
    const Run r = runCli({"--help"});
    QCOMPARE(r.exitCode, 0);
    for (const char *f : {"--cp 1,2,4", "--vpp 1,2,3,4", "--recompute none,selective,full", "--no-recompute"})
        QVERIFY2(r.out.contains(f), f);
}

QTEST_APPLESS_MAIN(TestCliSearchLists)
#include "test_cli_search_lists.moc"
