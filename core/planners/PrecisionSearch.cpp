#include "PrecisionSearch.h"

#include "Plan.h"
#include "Topology.h"

#include <algorithm>

namespace nest {

Result<std::vector<Precision>> searchPrecisions(const std::vector<NumberFormat> &formats, Fp8Recipe recipe,
                                                bool recipeGiven, const Topology &topo, Framework framework)
{
    using R = Result<std::vector<Precision>>;
    const FrameworkProfile &fw = frameworkProfile(framework);
    std::vector<Precision> out;
    if (formats.empty()) {
        for (NumberFormat f : kNumberFormats) {
            Precision p{f, Fp8Recipe::Delayed};
            if (f == NumberFormat::Fp8) {
                p.recipe = recipe;
                if (!fw.supports(p) && !recipeGiven)
                    for (Fp8Recipe r : kFp8Recipes)
                        if (fw.supports({f, r})) {
                            p.recipe = r;
                            break;
                        }
            }
            if (fw.supports(p) && precisionProblem(topo, p).empty())
                out.push_back(p);
        }
        if (out.empty())  // cannot happen for bf16, which every device and framework has
            return R::failure("no precision runs on these devices with " + std::string(toString(framework)));
        return out;
    }
    for (NumberFormat f : formats) {
        const Precision p{f, f == NumberFormat::Fp8 ? recipe : Fp8Recipe::Delayed};
        if (std::find(out.begin(), out.end(), p) != out.end())
            return R::failure(std::string("precision ") + toString(f) + " is listed twice");
        if (const std::string why = precisionProblem(topo, p); !why.empty())
            return R::failure(why);
        if (!fw.supports(p))
            return R::failure("precision " + precisionLabel(p) + " is not one " + toString(framework) +
                              " trains in (docs/cost-model.md, \"Precision\")");
        out.push_back(p);
    }
    return out;
}

PlanResult planPrecisions(const Planner &planner, const Topology &topo, const ModelProfile &model,
                          const SearchOptions &options, const ProgressFn &progress, const CancelToken &cancel)
{
    if (options.precisions.size() <= 1) {
        SearchOptions one = options;
        if (!options.precisions.empty())
            one.cost.precision = options.precisions.front();
        return planner.plan(topo, model, one, progress, cancel);
    }
    const size_t n = options.precisions.size();
    PlanResult best;
    SearchStats stats;
    std::vector<RankedPlan> top;
    std::string messages;
    double bestSoFar = 0;
    for (size_t i = 0; i < n; ++i) {
        SearchOptions one = options;
        one.cost.precision = options.precisions[i];
        ProgressFn scaled;
        if (progress)
            scaled = [&, i](double f, double b) {
                const double shown = b > 0 && (bestSoFar <= 0 || b < bestSoFar) ? b : bestSoFar;
                progress((static_cast<double>(i) + std::clamp(f, 0.0, 1.0)) / static_cast<double>(n), shown);
            };
        PlanResult r = planner.plan(topo, model, one, scaled, cancel);
        stats.states += r.stats.states;
        stats.transitions += r.stats.transitions;
        stats.pruned += r.stats.pruned;
        stats.stageCostCalls += r.stats.stageCostCalls;
        stats.configs += r.stats.configs;
        stats.configsSkipped += r.stats.configsSkipped;
        stats.wallSeconds += r.stats.wallSeconds;
        if (r.found) {
            if (!best.found || r.objective < best.objective) {
                best = r;
                bestSoFar = r.objective;
            }
            for (RankedPlan &p : r.top)
                top.push_back(std::move(p));
        } else if (!r.message.empty()) {
            messages += (messages.empty() ? "" : "; ") + precisionLabel(one.cost.precision) + ": " + r.message;
        }
        if (r.cancelled || cancel.cancelled()) {
            best.cancelled = true;
            break;
        }
    }
    best.stats = stats;
    if (!best.found && best.message.empty())
        best.message = messages;
    if (options.topK > 1) {
        std::stable_sort(top.begin(), top.end(),
                         [](const RankedPlan &a, const RankedPlan &b) { return a.objective < b.objective; });
        if (top.size() > static_cast<size_t>(options.topK))
            top.resize(static_cast<size_t>(options.topK));
        best.top = std::move(top);
    }
    if (progress)
        progress(1.0, best.found ? best.objective : 0.0);
    return best;
}

} // namespace nest
