// Several values at once: what a @wp.func with `return a, b` (or a tuple-valued builtin) returns.
// tw::tuple_t<A, B, ...> is a plain aggregate (head + tail), so it copies like any local and
// needs no standard library (NVRTC has none). The emitter always names the element types
// explicitly (make_tuple<A, B>(a, b)) so literals never deduce a different C++ type.
#pragma once
#include "target.h"

namespace tw {
template <typename... Ts> struct tuple_t;
template <> struct tuple_t<> {};
template <typename H, typename... Ts> struct tuple_t<H, Ts...> {
    H head;
    tuple_t<Ts...> tail;
};

namespace detail {
template <int I> struct tuple_at {
    template <typename H, typename... Ts>
    static TW_FUNC auto get(const tuple_t<H, Ts...>& t) -> decltype(tuple_at<I - 1>::get(t.tail)) {
        return tuple_at<I - 1>::get(t.tail);
    }
    template <typename H, typename... Ts>
    static TW_FUNC auto get(tuple_t<H, Ts...>& t) -> decltype(tuple_at<I - 1>::get(t.tail)) {
        return tuple_at<I - 1>::get(t.tail);
    }
};
template <> struct tuple_at<0> {
    template <typename H, typename... Ts> static TW_FUNC const H& get(const tuple_t<H, Ts...>& t) {
        return t.head;
    }
    template <typename H, typename... Ts> static TW_FUNC H& get(tuple_t<H, Ts...>& t) { return t.head; }
};
}  // namespace detail

template <int I, typename... Ts>
TW_FUNC auto get(const tuple_t<Ts...>& t) -> decltype(detail::tuple_at<I>::get(t)) {
    return detail::tuple_at<I>::get(t);
}
// Writable element: a tuple's adjoint accumulates into one element (tuple_get's adjoint).
template <int I, typename... Ts>
TW_FUNC auto get(tuple_t<Ts...>& t) -> decltype(detail::tuple_at<I>::get(t)) {
    return detail::tuple_at<I>::get(t);
}

template <typename... Ts> struct tuple_maker;
template <> struct tuple_maker<> {
    static TW_FUNC tuple_t<> make() { return tuple_t<>{}; }
};
template <typename H, typename... Ts> struct tuple_maker<H, Ts...> {
    static TW_FUNC tuple_t<H, Ts...> make(const H& h, const Ts&... ts) {
        return tuple_t<H, Ts...>{h, tuple_maker<Ts...>::make(ts...)};
    }
};

// make_tuple<A, B>(a, b): the element types are given, never deduced.
template <typename... Ts> TW_FUNC tuple_t<Ts...> make_tuple(const Ts&... xs) {
    return tuple_maker<Ts...>::make(xs...);
}
}  // namespace tw
