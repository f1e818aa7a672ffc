#pragma once
// Wall-clock bounds that the issues set (cancel within 100 ms) hold for the optimised build
// that users run. The sanitizer builds (make test-sanitize, make test-tsan) run the same code
// several times slower (TSan: cancel took 171 ms where the normal build takes 1-7 ms), so
// there the bounds are scaled by kTimingSlack; the measured figures are printed either way.
namespace testtiming {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr double kTimingSlack = 10;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr double kTimingSlack = 10;
#else
inline constexpr double kTimingSlack = 1;
#endif
#else
inline constexpr double kTimingSlack = 1;
#endif

} // namespace testtiming
