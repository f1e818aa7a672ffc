#pragma once
// An open-addressing hash map (linear probing) from a 128-bit key to a small value, for the
// planner's memo tables: no allocation per entry, and clear() in O(1) by a generation stamp.
#include "FlatKey.h"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace nest {

// Values are returned by copy. With Rows, the low 32 bits of FlatKey::hi are added to the
// hash of the rest instead of mixed in, so keys that differ only there (a DP row:
// consecutive first layers) sit side by side.
template <typename V, bool Rows = false>
class FlatHashMap {
public:
    FlatHashMap() { rehash(1024); }

    bool find(const FlatKey &k, V &out) const
    {
        for (size_t i = slot(k);; i = (i + 1) & m_mask) {
            const Slot &s = m_slots[i];
            if (s.stamp != m_gen)
                return false;
            if (s.key == k) {
                out = s.value;
                return true;
            }
        }
    }
    // k must not be present.
    void insert(const FlatKey &k, const V &v)
    {
        if ((m_size + 1) * 2 > m_slots.size())
            rehash(m_slots.size() * 2);
        size_t i = slot(k);
        while (m_slots[i].stamp == m_gen)
            i = (i + 1) & m_mask;
        m_slots[i] = {k, v, m_gen};
        ++m_size;
    }
    // Heap bytes of the table.
    size_t bytes() const { return m_slots.capacity() * sizeof(Slot); }
    void clear()
    {
        // A table much larger than its last use would only cost cache misses: shrink it.
        if (m_slots.size() > 4096 && m_size * 16 < m_slots.size()) {
            const size_t want = std::max<size_t>(1024, std::bit_ceil(m_size * 4));
            m_size = 0;
            m_slots.clear();
            rehash(want);
            return;
        }
        m_size = 0;
        if (++m_gen == 0) {
            for (Slot &s : m_slots)
                s.stamp = 0;
            m_gen = 1;
        }
    }

private:
    struct Slot {
        FlatKey key;
        V value;
        uint32_t stamp = 0;
    };
    std::vector<Slot> m_slots;
    uint32_t m_gen = 1;
    size_t m_size = 0, m_mask = 0;

    static uint64_t mix(uint64_t x)
    {
        // splitmix64 finaliser
        x ^= x >> 30;
        x *= 0xbf58476d1ce4e5b9ull;
        x ^= x >> 27;
        x *= 0x94d049bb133111ebull;
        return x ^ (x >> 31);
    }
    static uint64_t hash(const FlatKey &k)
    {
        if constexpr (Rows)
            return mix((k.hi >> 32) ^ mix(k.lo)) + (k.hi & 0xffffffffull);
        else
            return mix(k.hi ^ mix(k.lo));
    }
    size_t slot(const FlatKey &k) const { return static_cast<size_t>(hash(k)) & m_mask; }
    void rehash(size_t capacity)
    {
        // (Not named "slots": Qt defines that as a macro, and Qt code includes this header.)
        std::vector<Slot> table(capacity);
        const size_t mask = capacity - 1;
        for (const Slot &s : m_slots) {
            if (s.stamp != m_gen)
                continue;
            size_t j = static_cast<size_t>(hash(s.key)) & mask;
            while (table[j].stamp == 1u)
                j = (j + 1) & mask;
            table[j] = {s.key, s.value, 1u};
        }
        m_slots.swap(table);
        m_gen = 1;
        m_mask = mask;
    }
};

} // namespace nest
