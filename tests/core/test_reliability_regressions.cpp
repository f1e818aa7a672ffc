// Every input the fuzzers ever crashed on (tests/fuzz/regressions/TARGET-NAME), run through
// the same target function as the fuzzer (tests/fuzz/FuzzTargets.h) in the normal suite: a
// regression aborts or trips a sanitizer here. Plus the hand-made inputs of issue 13.
#include "SourceDir.h"
#include "../fuzz/FuzzTargets.h"

#include "CoreTestSupport.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace nest;
namespace fs = std::filesystem;

namespace {

using Target = int (*)(const uint8_t *, size_t);

Target targetFor(const std::string &fileName)
{
    const std::string kind = fileName.substr(0, fileName.find('-'));
    if (kind == "cluster")
        return fuzz::cluster;
    if (kind == "model")
        return fuzz::model;
    if (kind == "hfconfig")
        return fuzz::hfConfig;
    if (kind == "profile")
        return fuzz::profile;
    if (kind == "plan")
        return fuzz::plan;
    if (kind == "workspace")
        return fuzz::workspace;
    if (kind == "pipeline")
        return fuzz::pipeline;
    if (kind == "search")
        return fuzz::search;
    // issue 48
    if (kind == "hostlist")
        return fuzz::hostlist;
    if (kind == "slurm")
        return fuzz::slurm;
    if (kind == "ncclxml")
        return fuzz::ncclXml;
    if (kind == "nvidiasmi")
        return fuzz::nvidiaSmi;
    if (kind == "astrasim")
        return fuzz::astraSim;
    if (kind == "runs")
        return fuzz::runs;
    if (kind == "calibration")
        return fuzz::calibration;
    return nullptr;
}

const std::string kRegressions = NEST_SOURCE_DIR "/tests/fuzz/regressions";

// QDir::entryList(QDir::Files or QDir::Dirs, QDir::Name): the names of the regular files (or
// the folders) in `dir`, hidden ones left out, sorted by name.
std::vector<std::string> entries(const std::string &dir, bool folders)
{
    std::vector<std::string> names;
    for (const fs::directory_entry &e : fs::directory_iterator(dir)) {
        const std::string name = e.path().filename().string();
        if (!name.empty() && name[0] != '.' && (folders ? e.is_directory() : e.is_regular_file()))
            names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
}

int runOn(Target target, const std::string &file)
{
    const std::string data = coretest::readFile(file);
    return target(reinterpret_cast<const uint8_t *>(data.data()), data.size());
}

} // namespace

TEST(ReliabilityRegressions, keptInputs)
{
    const std::vector<std::string> files = entries(kRegressions, false);
    if (files.empty())
        GTEST_SKIP() << "no kept inputs";
    for (const std::string &file : files) {
        if (file == "README.md")
            continue;
        SCOPED_TRACE(file);
        [&] {
            const Target target = targetFor(file);
            ASSERT_TRUE(target) << "unknown target prefix in " << file
                                << " (cluster-, model-, hfconfig-, profile-, plan-, workspace-, pipeline-, search-, hostlist-, slurm-, "
                                   "ncclxml-, nvidiasmi-, astrasim-, runs-, calibration-)";
            ASSERT_TRUE(std::ifstream(kRegressions + "/" + file, std::ios::binary).is_open());
            ASSERT_EQ(runOn(target, kRegressions + "/" + file), 0);
        }();
    }
}

TEST(ReliabilityRegressions, everySeedStillLoads)
{
    // The seed corpora are the sample files: the targets run them without complaint.
    int runs = 0;
    const std::string corpus = NEST_SOURCE_DIR "/tests/fuzz/corpus";
    for (const std::string &sub : entries(corpus, true)) {
        const std::string dir = corpus + "/" + sub;
        std::string kind = sub;
        kind.erase(std::remove(kind.begin(), kind.end(), '_'), kind.end());
        const Target target = targetFor(kind + "-");
        ASSERT_TRUE(target) << sub;
        for (const std::string &f : entries(dir, false)) {
            SCOPED_TRACE(dir + "/" + f);
            ASSERT_TRUE(std::ifstream(dir + "/" + f, std::ios::binary).is_open());
            ASSERT_EQ(runOn(target, dir + "/" + f), 0);
            ++runs;
        }
    }
    ASSERT_TRUE(runs >= 40);
}
