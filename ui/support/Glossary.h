#pragma once
// The terms the window shows without explaining them (MFU, ZeRO, bubble share, ...): one
// tooltip text per term, used wherever the term is a label (Summary rows, Compare rows, the
// Search dock's checkboxes), so that every place explains it the same way.
#include <QString>

namespace nest::ui {

// The tooltip for a term key: "mfu", "cluster_mfu", "zero", "bubble_share", "comm_share",
// "recompute", "sp", "throughput", "iteration", "microbatch", "memory"; also the Compare
// row keys of PlanComparison.h ("iteration_time", "peak_memory", "tokens_per_s"). "" for
// any other key.
QString termTip(const QString &key);

} // namespace nest::ui
