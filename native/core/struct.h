// @wp.struct values. The structs themselves are emitted into each kernel's source (plain
// aggregates, natural alignment, so the ctypes twin in tilewarp/structs.py has the same layout).
#pragma once
#include "target.h"

namespace tw {
// s.field = v as a value: a copy of s with one member replaced (the frontend keeps values SSA).
// V is deduced apart from F so a literal's C++ type (e.g. `long long` for int64_t) still binds.
template <typename S, typename F, typename V> TW_FUNC S with_field(S s, F S::*field, const V& v) {
    s.*field = v;
    return s;
}
}  // namespace tw
