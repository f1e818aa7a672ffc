#include "RangeClasses.h"

#include <algorithm>

namespace nest {

std::vector<int> layerTypes(const ModelProfile &model)
{
    std::vector<int> type;
    std::vector<LayerProfile> types;
    for (const LayerProfile &l : model.layers) {
        LayerProfile anon = l;
        anon.name.clear();
        const auto it = std::find(types.begin(), types.end(), anon);
        type.push_back(static_cast<int>(it - types.begin()));
        if (it == types.end())
            types.push_back(std::move(anon));
    }
    return type;
}

RangeClasses::RangeClasses(const ModelProfile &model)
    : m_layers(static_cast<int>(model.layers.size())), m_layerType(layerTypes(model))
{
    m_rangeNode.assign(static_cast<size_t>(m_layers + 1) * (m_layers + 1), -1);
}

size_t RangeClasses::bytes() const
{
    return (m_layerType.capacity() + m_rangeNode.capacity() + m_nodeClass.capacity()) * sizeof(int) +
           m_rangeChild.bytes();
}

int RangeClasses::rangeClass(int first, int end)
{
    int &cls = m_nodeClass[static_cast<size_t>(rangeNode(first, end))];
    if (cls < 0)
        cls = m_rangeClasses++;
    return cls;
}

// The trie node of the sequence of [first, end): the type of the layer before it (its output
// is the stage's input, p2p; -1 before the first layer), then the types of its layers. Two
// ranges reach the same node exactly when their sequences are equal. Found from the longest
// range [first, e) with e <= end whose node is known, one type at a time; every range on
// the way gets its node, so each (first, e) is extended at most once.
int RangeClasses::rangeNode(int first, int end)
{
    int *row = &m_rangeNode[static_cast<size_t>(first) * (m_layers + 1)];
    int e = end;
    while (e > first && row[e] < 0)
        --e;
    int node = row[e];
    if (node < 0) {  // e == first: the sequence of the type before the range alone
        node = childNode(-1, first > 0 ? m_layerType[static_cast<size_t>(first) - 1] : -1);
        row[e] = node;
    }
    for (; e < end; ++e) {
        node = childNode(node, m_layerType[static_cast<size_t>(e)]);
        row[e + 1] = node;
    }
    return node;
}

int RangeClasses::childNode(int node, int type)
{
    const FlatKey key{static_cast<uint64_t>(node + 1), static_cast<uint64_t>(type + 1)};
    int child = -1;
    if (!m_rangeChild.find(key, child)) {
        child = static_cast<int>(m_nodeClass.size());
        m_nodeClass.push_back(-1);
        m_rangeChild.insert(key, child);
    }
    return child;
}

} // namespace nest
