#include "SuffixSignatures.h"

#include <cstdint>

namespace nest {

int SuffixSignatures::id(const StageConfig &c, int tier, int next)
{
    const FlatKey ck = c.key();
    int config = -1;
    if (!m_configIds.find(ck, config)) {
        config = m_configCount++;
        m_configIds.insert(ck, config);
    }
    const FlatKey key{(static_cast<uint64_t>(config) << 32) | static_cast<uint32_t>(tier + 1),
                      static_cast<uint64_t>(static_cast<uint32_t>(next))};
    int sig = -1;
    if (!m_sigIds.find(key, sig)) {
        sig = ++m_sigCount;
        m_sigIds.insert(key, sig);
    }
    return sig;
}

} // namespace nest
