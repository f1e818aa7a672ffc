#pragma once
// Small helpers shared by the GUI test suites.
#include "SourceDir.h"
#include "PlanBuilder.h"
#include "Topology.h"

#include <QFile>
#include <QString>

#include <string>

namespace uitest {

inline const QString kQuickstart =
    QStringLiteral(NEST_SOURCE_DIR "/sample_configs/workspaces/quickstart.nestws.json");
inline const QString kClusterSample =
    QStringLiteral(NEST_SOURCE_DIR "/sample_configs/clusters/paper-v100-16.json");

// A uniform layout of tp x pp x dp (UniformLayout derives from StageConfig, so designated
// initialisers cannot name its fields).
inline nest::UniformLayout layout(int tp, int pp, int dp, int zero = 0,
                                  nest::Recompute recompute = nest::Recompute::None)
{
    nest::UniformLayout u;
    u.tp = tp;
    u.pp = pp;
    u.dp = dp;
    u.zero = zero;
    u.recompute = recompute;
    return u;
}

// Index of the group with this name, -1 when there is none.
inline int groupNamed(const nest::Topology &t, const std::string &name)
{
    for (int g = 0; g < static_cast<int>(t.groups.size()); ++g)
        if (t.groups[g].name == name)
            return g;
    return -1;
}

// The whole file, or empty when it cannot be read.
inline QByteArray bytesOf(const QString &file)
{
    QFile f(file);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

} // namespace uitest
