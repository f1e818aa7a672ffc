#pragma once
// Small text forms several readers and writers share: one definition each, so a preset name,
// a keyword or a printed number reads and prints the same everywhere.
#include <string>

namespace nest {

// `s` with ASCII letters lowered (other bytes unchanged): keywords matched without case.
std::string asciiLower(std::string s);

// The form a preset name is looked up by: ASCII lowered, '_' and ' ' read as '-'
// ("H100_SXM 80gb" -> "h100-sxm-80gb").
std::string presetKey(std::string s);

// `v` with exactly `digits` decimals, in the C locale's form ("%.*f").
std::string fixedDecimals(double v, int digits);

} // namespace nest
