// Names of what the editor adds (issue 49, point 3): a rack added to a cluster whose racks are
// named rack0..rack3 (the compact form's and the templates' names) is rack4 with nodes named
// after the free node numbers, not "rack0-1" with "node0-1"...
#include "ClusterEdits.h"
#include "ClusterTemplates.h"

#include "CoreTestSupport.h"

using namespace nest;

TEST(ClusterEditNames, addedRackContinuesTheNumbering)
{
    // fat-tree-8x4x4: 8 devices per node, 4 nodes per rack, 4 racks below spine0: racks
    // rack0..rack3, nodes node0..node15 (Topology::uniform's depth-first numbering).
    const Topology t = Topology::uniform("c", devicePreset("h100-sxm-80gb").value(),
                                         {{"node", 8, {1e11, 0, 1}}, {"rack", 4, {1e10, 0, 1}}, {"spine", 4, {1e10, 0, 1}}});
    GroupUid next = 1;
    const ClusterState s = makeClusterState(t, next);
    int spine = -1;
    for (int g = 0; g < static_cast<int>(t.groups.size()); ++g)
        if (t.groups[g].level == 2)
            spine = g;
    ASSERT_GE(spine, 0);
    auto added = addRack(s, spine, next);
    ASSERT_TRUE(added.ok()) << added.error();
    const Topology &u = added->topology;
    std::vector<std::string> racks, nodes;
    for (int g : u.groupsAtLevel(1))
        racks.push_back(u.groups[g].name);
    EXPECT_EQ(racks, (std::vector<std::string>{"rack0", "rack1", "rack2", "rack3", "rack4"}));
    const int rack4 = u.groupsAtLevel(1).back();
    for (int c : u.groups[rack4].children)
        nodes.push_back(u.groups[c].name);
    EXPECT_EQ(nodes, (std::vector<std::string>{"node16", "node17", "node18", "node19"}));
}

TEST(ClusterEditNames, dashedNamesKeepTheirStyle)
{
    EXPECT_EQ(uniqueGroupName(Topology::uniform("c", devicePreset("h100-sxm-80gb").value(), {{"node", 2, {1e11, 0, 1}}}),
                              "rack"),
              "rack-1");
}
