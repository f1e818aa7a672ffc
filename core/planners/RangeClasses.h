#pragma once
// Range classes (docs/planner.md, "Symmetry"): two layer ranges [first, end) share a class
// when their layers' types (layerTypes(): equal profiles up to the name) and the type of
// the layer just before them (whose output the stage receives) are equal, so every stage
// cost that reads the layers cannot tell them apart. Depends on the model alone: a
// LayerSumsStore keeps one across searches of the same model.
#include "FlatHashMap.h"
#include "ModelProfile.h"

#include <cstddef>
#include <vector>

namespace nest {

// The type of each layer: equal profiles up to the name share a type; ids in order of first
// appearance.
std::vector<int> layerTypes(const ModelProfile &model);

class RangeClasses {
public:
    explicit RangeClasses(const ModelProfile &model);
    // The class of [first, end), 0 <= first <= end <= layer count. Classes are numbered in
    // the order they are first asked for.
    int rangeClass(int first, int end);
    int layerCount() const { return m_layers; }
    // Heap bytes held (roughly).
    size_t bytes() const;

private:
    // The ranges' sequences (the type before, then the layers' types) live in a trie, so a
    // range's class costs O(1) from the range one layer shorter instead of building its
    // sequence and comparing it in an ordered map (O(length * log classes); docs/planner.md,
    // "Range classes"). m_rangeNode: per (first, end) its sequence's node, -1 not yet
    // reached; m_rangeChild: (node + 1, type + 1) -> the node one type longer (node -1: the
    // empty sequence); m_nodeClass: per node its class, -1 not yet asked.
    int rangeNode(int first, int end);
    int childNode(int node, int type);

    int m_layers;
    std::vector<int> m_layerType;
    std::vector<int> m_rangeNode;
    FlatHashMap<int> m_rangeChild;
    std::vector<int> m_nodeClass;
    int m_rangeClasses = 0;
};

} // namespace nest
