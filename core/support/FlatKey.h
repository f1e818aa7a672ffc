#pragma once
// A 128-bit key; callers pack their fields into it (each documents its layout). The key of
// FlatHashMap and of StageConfig::key().
#include <cstdint>

namespace nest {

struct FlatKey {
    uint64_t hi = 0, lo = 0;
    bool operator==(const FlatKey &) const = default;
};

} // namespace nest
