#include "SweepResultsFile.h"

#include "FileGuard.h"
#include "JsonUtil.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

namespace nest {

namespace {

std::string valueText(const Json &v)
{
    return v.is_string() ? v.get<std::string>() : v.dump();
}

SweepRecord recordFromJson(const Json &j)
{
    requireObject(j, "");
    SweepRecord r;
    r.point = requireKey(j, "point", "");
    requireObject(r.point, "point");
    r.ok = getBool(j, "ok", "", false);
    if (r.ok) {
        const Json &report = requireKey(requireKey(j, "result", ""), "report", "result");
        r.samplesPerSecond = getNonNegative(report, "throughput_samples_per_s", "result.report");
        r.iterationTime = getNonNegative(report, "iteration_time_s", "result.report");
        r.mfu = getNonNegative(report, "mfu", "result.report", 0);
    } else {
        r.error = getString(j, "error", "", "");
    }
    return r;
}

} // namespace

Result<SweepResultsFile> loadSweepResults(const std::string &file)
{
    const Result<std::string> text = readFileText(file);
    if (!text)
        return Result<SweepResultsFile>::failure(text.error());
    SweepResultsFile out;
    std::map<std::string, size_t> byPoint;  // a point written again (a rerun): the last line wins
    std::istringstream in(*text);
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
        ++number;
        if (line.find_first_not_of(" \t\r") == std::string::npos)
            continue;
        Json j = Json::parse(line, nullptr, false);
        if (j.is_discarded()) {
            ++out.skippedLines;
            continue;
        }
        try {
            SweepRecord r = recordFromJson(j);
            for (const auto &item : r.point.items())
                if (std::find(out.keys.begin(), out.keys.end(), item.key()) == out.keys.end())
                    out.keys.push_back(item.key());
            const std::string id = r.point.dump();
            if (const auto it = byPoint.find(id); it != byPoint.end()) {
                out.records[it->second] = std::move(r);
            } else {
                byPoint[id] = out.records.size();
                out.records.push_back(std::move(r));
            }
        } catch (const JsonError &e) {
            return Result<SweepResultsFile>::failure(file + ": line " + std::to_string(number) + ": " +
                                                     formatError("", e.path(), e.reason()));
        }
    }
    if (out.records.empty())
        return Result<SweepResultsFile>::failure(
            formatError(file, "", "no sweep results in it (one {\"point\", \"ok\", \"result\"} object per line, "
                                  "as nest_planner.sweep() writes)"));
    for (const std::string &k : out.keys) {
        const Json *first = nullptr;
        bool varies = false;
        for (const SweepRecord &r : out.records) {
            const Json v = r.point.contains(k) ? r.point.at(k) : Json();
            if (!first)
                first = &r.point;
            const Json f = first->contains(k) ? first->at(k) : Json();
            varies = varies || v != f;
        }
        if (varies)
            out.varying.push_back(k);
    }
    return out;
}

std::vector<std::string> numericVaryingKeys(const SweepResultsFile &f)
{
    std::vector<std::string> out;
    for (const std::string &k : f.varying) {
        bool numeric = true;
        for (const SweepRecord &r : f.records)
            numeric = numeric && r.point.contains(k) && r.point.at(k).is_number();
        if (numeric)
            out.push_back(k);
    }
    return out;
}

Result<SweepChart> sweepChart(const SweepResultsFile &f, const std::string &xKey, const std::string &seriesKey)
{
    const std::vector<std::string> numeric = numericVaryingKeys(f);
    if (std::find(numeric.begin(), numeric.end(), xKey) == numeric.end())
        return Result<SweepChart>::failure("'" + xKey + "' is not a keyword that varies and is a number at every point");
    if (!seriesKey.empty() &&
        (seriesKey == xKey || std::find(f.varying.begin(), f.varying.end(), seriesKey) == f.varying.end()))
        return Result<SweepChart>::failure("'" + seriesKey + "' is not another keyword that varies");
    SweepChart c;
    c.xKey = xKey;
    c.seriesKey = seriesKey;
    for (const std::string &k : f.varying)
        if (k != xKey && k != seriesKey)
            c.reducedOver.push_back(k);
    // series name -> x -> best throughput (NaN while only failed points were seen)
    std::vector<std::string> order;
    std::map<std::string, std::map<double, double>> best;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (const SweepRecord &r : f.records) {
        const std::string name = seriesKey.empty()
                                     ? std::string("samples/s")
                                     : seriesKey + "=" + (r.point.contains(seriesKey) ? valueText(r.point.at(seriesKey)) : "-");
        if (!best.count(name))
            order.push_back(name);
        const double x = r.point.at(xKey).get<double>();
        auto &points = best[name];
        auto [it, inserted] = points.emplace(x, nan);
        if (r.ok && (std::isnan(it->second) || r.samplesPerSecond > it->second))
            it->second = r.samplesPerSecond;
    }
    for (const std::string &name : order) {
        SweepSeriesData s;
        s.name = name;
        for (const auto &[x, y] : best[name]) {
            s.x.push_back(x);
            s.y.push_back(y);
        }
        c.series.push_back(std::move(s));
    }
    return c;
}

Result<SweepChart> sweepChart(const SweepResultsFile &f)
{
    const std::vector<std::string> numeric = numericVaryingKeys(f);
    if (numeric.empty())
        return Result<SweepChart>::failure("no keyword of the sweep is a number that varies (an x axis)");
    std::string seriesKey;
    for (const std::string &k : f.varying)
        if (k != numeric.front()) {
            seriesKey = k;
            break;
        }
    return sweepChart(f, numeric.front(), seriesKey);
}

} // namespace nest
