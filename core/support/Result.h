#pragma once
// A value or an error message. Core functions that can fail on user input return this
// instead of throwing across the library boundary; the caller (CLI, GUI) decides how to
// show the message. Messages follow "FILE: at JSON.PATH: REASON" (see JsonUtil.h).
#include <optional>
#include <string>
#include <utility>

namespace nest {

template <typename T>
class Result {
public:
    Result(T value) : m_value(std::move(value)) {}  // NOLINT: implicit by design
    // `error` is moved into m_error: clang-tidy 14 misses the std::move inside a class template.
    // NOLINTNEXTLINE(performance-unnecessary-value-param)
    static Result failure(std::string error)
    {
        Result r;
        r.m_error = std::move(error);
        return r;
    }
    bool ok() const { return m_value.has_value(); }
    explicit operator bool() const { return ok(); }
    const T &value() const & { return *m_value; }
    T &value() & { return *m_value; }
    T &&value() && { return std::move(*m_value); }
    const T &operator*() const & { return *m_value; }
    T &operator*() & { return *m_value; }
    const T *operator->() const { return &*m_value; }
    T *operator->() { return &*m_value; }
    const std::string &error() const { return m_error; }

private:
    Result() = default;
    std::optional<T> m_value;
    std::string m_error;
};

} // namespace nest
