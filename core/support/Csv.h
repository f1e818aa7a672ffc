#pragma once
// CSV text for the tables the tools write (results.csv, comparison and sweep CSVs): a field
// quoted only when it must be (RFC 4180: a comma, a quote or a line break inside; quotes
// doubled).
#include <string>

namespace nest {

std::string csvField(const std::string &s);

} // namespace nest
