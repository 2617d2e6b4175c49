// Whole numbers read from JSON without undefined behaviour. nlohmann's
// get<int>() static_casts a float (1e26 -> int is undefined) and narrows
// a wide integer silently; files from users and requests from clients
// may hold either.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <type_traits>

namespace swan {

// v as a T when v is a number with a whole value inside T's range (2, 2.0
// and 2e0 alike); nullopt for anything else (2.5, 1e26, -1 as unsigned,
// NaN, a string).
template <typename T>
std::optional<T> JsonInteger(const nlohmann::json& v) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  using Limits = std::numeric_limits<T>;
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > uint64_t(Limits::max())) return std::nullopt;
    return T(u);
  }
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if constexpr (std::is_unsigned_v<T>) {
      if (i < 0 || uint64_t(i) > uint64_t(Limits::max())) return std::nullopt;
    } else {
      if (i < int64_t(Limits::min()) || i > int64_t(Limits::max())) return std::nullopt;
    }
    return T(i);
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    // 2^63 and -2^63 are exact doubles; a whole double inside them fits int64.
    if (!std::isfinite(d) || d != std::trunc(d) || d < -0x1p63 || d >= 0x1p63) return std::nullopt;
    return JsonInteger<T>(nlohmann::json(int64_t(d)));
  }
  return std::nullopt;
}

}  // namespace swan
