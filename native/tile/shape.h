// Element access, broadcasts and the portable matmul (views are tile_alias, in tile.h).
//
// Ops here read their input at elements other than the ones a lane owns, so on CUDA the input is
// a shared tile (tilewarp/block/storage.py makes it one); on the CPU every tile is whole.
#pragma once
#include "tile.h"
#include "mma.h"
#include "gemm_host.h"
#include "../runtime/atomic.h"
#include "../runtime/array_adjoint.h"

namespace tw {
namespace detail {
// An add into an element of a tile of this block: atomic on CUDA, where several of its threads may
// add there at once; a plain add on the CPU, where one thread runs the whole block.
template <typename T> TW_FUNC void block_accum(T* p, const T& v) {
#if TW_IS_CUDA
    atomic_accum(p, v);
#else
    *p = add(*p, v);
#endif
}
}  // namespace detail

// Row-major position of an element; negative indices count from the end.
template <typename S, typename... I> TW_FUNC int tile_index(I... i) {
    static_assert(sizeof...(I) == S::ndim, "one index per tile dimension");
    const int64_t v[sizeof...(I)] = {(int64_t)i...};
    int lin = 0;
    for (int d = 0; d < S::ndim; ++d) {
        int64_t k = v[d];
        if (k < 0) k += S::extent(d);
        lin += (int)k * S::stride(d);
    }
    return lin;
}

template <typename X> TW_FUNC const typename X::value_type& tile_get(const X& t, int lin) {
#if TW_IS_CUDA
    static_assert(X::shared, "tilewarp: element reads need a shared tile");
#endif
    return t.at(lin, lin);
}
template <typename X> TW_FUNC typename X::value_type& tile_ref(X& t, int lin) {
#if TW_IS_CUDA
    static_assert(X::shared, "tilewarp: element writes need a shared tile");
#endif
    return t.at(lin, lin);
}

// adjoint of an element write: the written value takes the element's adjoint, and the element's old
// value, overwritten, has none left (Warp's semantics)
template <typename X> TW_FUNC typename X::value_type tile_take(X& adj_t, int lin) {
    const typename X::value_type g = tile_ref(adj_t, lin);
    tile_ref(adj_t, lin) = typename X::value_type();
    return g;
}

// adjoint of an element read: the element's adjoint receives this lane's share
template <typename X> TW_FUNC void adj_tile_get(X& adj_t, int lin, const typename X::value_type& g) {
    detail::block_accum(&tile_ref(adj_t, lin), g);
}

// ---- broadcast (NumPy rules, right-aligned), transpose, sub-tile copies ------------------------
template <typename D, typename X> TW_FUNC int broadcast_source(int e) {
    typedef typename D::shape SD;
    typedef typename X::shape SX;
    int src = 0;
    for (int d = 0; d < SX::ndim; ++d) {
        const int k = d + SD::ndim - SX::ndim;  // destination dimension of source dimension d
        const int i = SX::extent(d) == 1 ? 0 : (e / SD::stride(k)) % SD::extent(k);
        src += i * SX::stride(d);
    }
    return src;
}
template <typename D, typename X> TW_FUNC void tile_broadcast(D& out, const X& t) {
    block_sync();
    tile_fill_with(out, [&](int, int e) {
        const int s = broadcast_source<D, X>(e);
        return t.at(s, s);
    });
}
template <typename X, typename D> TW_FUNC void adj_tile_broadcast(X& adj_t, const D& adj_out) {
#if !TW_IS_CUDA
    typedef typename D::shape SD;
    typedef typename X::shape SX;
    if constexpr (SD::ndim == 2 && SX::ndim == 2 && SX::extent(1) == 1 && SX::extent(0) == SD::extent(0)) {
        // a column over the rows (a bias): each row's sum in 8 running sums, not one add after
        // another into memory (a fixed order, so run to run the same)
        constexpr int R = SD::extent(0), C = SD::extent(1);
        typedef typename D::value_type T;
        for (int i = 0; i < R; ++i) {
            T part[8] = {};
            int j = 0;
            for (; j + 8 <= C; j += 8)
                for (int l = 0; l < 8; ++l) part[l] = add(part[l], adj_out.at(i * C + j + l, i * C + j + l));
            for (; j < C; ++j) part[0] = add(part[0], adj_out.at(i * C + j, i * C + j));
            T sum = part[0];
            for (int l = 1; l < 8; ++l) sum = add(sum, part[l]);
            adj_t.at(i, i) = add(adj_t.at(i, i), sum);
        }
        return;
    }
#endif
    tile_for<D::size, D::threads>([&](int r, int e) {
        const int s = broadcast_source<D, X>(e);
        detail::block_accum(&adj_t.at(s, s), adj_out.at(r, e));
    });
}

// ---- matmul: out = alpha * a @ b + beta * c -------------------------------------------------------
// Tensor cores where mma.h's paths apply (CUDA), else a portable loop. The operands' and out's
// dtypes are independent (float16/32/64, as in Warp); products are summed in out's dtype.
// Async (pipelined K loops only, emit/cpp.py): the operands were just published by tw::async_wait
// and are refilled only after a block sync; a wgmma product may still be running on return
template <bool Async = false, typename D, typename A, typename B, typename C, typename S>
TW_FUNC void tile_matmul(D& out, const A& a, const B& b, const C& c, S alpha, S beta) {
    if (detail::tile_matmul_mma<Async>(out, a, b, c, alpha, beta)) return;
    constexpr int K = A::shape::extent(1), N = B::shape::extent(1);
    typedef typename D::value_type T;
    typedef typename detail::matmul_acc_of<T>::type Acc;
#if !TW_IS_CUDA
    if constexpr (detail::host_vec<Acc>::ok) {
        if (detail::host_overlaps(out, a) || detail::host_overlaps(out, b)) {  // rare: the operands' copies
            rtile<typename A::value_type, typename A::shape, 1> a2;
            rtile<typename B::value_type, typename B::shape, 1> b2;
            tile_copy(a2, a);
            tile_copy(b2, b);
            tile_matmul(out, a2, b2, c, alpha, beta);
            return;
        }
        // branches outside the row loops, so that they vectorise (out and c are often one tile)
        const Acc al = cast<Acc>(alpha), be = cast<Acc>(beta);
        const int form = alpha == S(1) && beta == S(1) ? 0 : beta == S(0) ? 1 : 2;
        detail::host_gemm<A::shape::extent(0), N, K, Acc>(
            detail::host_operand_of<false, Acc>(a), detail::host_operand_of<false, Acc>(b),
            [&](int i, int j0, const Acc* v, int n) {
                if (form == 0)
                    for (int j = 0; j < n; ++j)
                        detail::host_at(out, i, j0 + j) = cast<T>(add(v[j], cast<Acc>(detail::host_at(c, i, j0 + j))));
                else if (form == 1)
                    for (int j = 0; j < n; ++j) detail::host_at(out, i, j0 + j) = cast<T>(mul(al, v[j]));
                else
                    for (int j = 0; j < n; ++j)
                        detail::host_at(out, i, j0 + j) =
                            cast<T>(add(mul(al, v[j]), mul(be, cast<Acc>(detail::host_at(c, i, j0 + j)))));
            });
        return;
    }
#endif
    block_sync();
    tile_fill_with(out, [&](int r, int e) {
        const int i = e / N, j = e % N;
        Acc acc = Acc();
        for (int k = 0; k < K; ++k)
            acc = add(acc, mul(cast<Acc>(a.at(i * K + k, i * K + k)), cast<Acc>(b.at(k * N + j, k * N + j))));
        const Acc v = mul(cast<Acc>(alpha), acc);
        return cast<T>(beta == S(0) ? v : add(v, mul(cast<Acc>(beta), cast<Acc>(c.at(r, e)))));
    });
}
template <typename A, typename B, typename AA, typename AB, typename C, typename D, typename S>
TW_FUNC void adj_tile_matmul(const A& a, const B& b, AA& adj_a, AB& adj_b, C& adj_c, S alpha, S beta, const D& adj_out) {
    constexpr int M = A::shape::extent(0), K = A::shape::extent(1), N = B::shape::extent(1);
    typedef typename AA::value_type TA;
    typedef typename AB::value_type TB;
    typedef typename C::value_type TC;
    typedef typename detail::matmul_acc_of<typename D::value_type>::type Acc;
#if !TW_IS_CUDA
    if constexpr (detail::host_vec<Acc>::ok) {
        const Acc al = cast<Acc>(alpha);
        detail::host_gemm<M, K, N, Acc>(  // adj_a += alpha * adj_out @ b^T
            detail::host_operand_of<false, Acc>(adj_out), detail::host_operand_of<true, Acc>(b),
            [&](int i, int k0, const Acc* v, int n) {
                for (int k = 0; k < n; ++k) {
                    auto& x = detail::host_at(adj_a, i, k0 + k);
                    x = cast<TA>(add(cast<Acc>(x), mul(al, v[k])));
                }
            });
        detail::host_gemm<K, N, M, Acc>(  // adj_b += alpha * a^T @ adj_out
            detail::host_operand_of<true, Acc>(a), detail::host_operand_of<false, Acc>(adj_out),
            [&](int k, int j0, const Acc* v, int n) {
                for (int j = 0; j < n; ++j) {
                    auto& x = detail::host_at(adj_b, k, j0 + j);
                    x = cast<TB>(add(cast<Acc>(x), mul(al, v[j])));
                }
            });
        if (beta != S(0))
            TW_FOR_OWNED(M * N, C::threads, r, e) adj_c.at(r, e) = add(adj_c.at(r, e), mul(cast<TC>(beta), cast<TC>(adj_out.at(r, e))));
        return;
    }
#endif
    block_sync();
    TW_FOR_OWNED(M * K, A::threads, r, e) {  // adj_a += alpha * adj_out @ b^T
        const int i = e / K, k = e % K;
        Acc acc = Acc();
        for (int j = 0; j < N; ++j)
            acc = add(acc, mul(cast<Acc>(adj_out.at(i * N + j, i * N + j)), cast<Acc>(b.at(k * N + j, k * N + j))));
        adj_a.at(r, e) = cast<TA>(add(cast<Acc>(adj_a.at(r, e)), mul(cast<Acc>(alpha), acc)));
    }
    TW_FOR_OWNED(K * N, B::threads, r, e) {  // adj_b += alpha * a^T @ adj_out
        const int k = e / N, j = e % N;
        Acc acc = Acc();
        for (int i = 0; i < M; ++i)
            acc = add(acc, mul(cast<Acc>(a.at(i * K + k, i * K + k)), cast<Acc>(adj_out.at(i * N + j, i * N + j))));
        adj_b.at(r, e) = cast<TB>(add(cast<Acc>(adj_b.at(r, e)), mul(cast<Acc>(alpha), acc)));
    }
    if (beta != S(0))
        TW_FOR_OWNED(M * N, C::threads, r, e) adj_c.at(r, e) = add(adj_c.at(r, e), mul(cast<TC>(beta), cast<TC>(adj_out.at(r, e))));
    block_sync();
}
// run-time alpha and beta: d/d alpha = sum of (a @ b) * adj_out, d/d beta = sum of c * adj_out (each
// thread adds its elements' share, as scalar adjoints of tile ops do)
template <typename V, typename A, typename B, typename D>
TW_FUNC void adj_tile_matmul_alpha(V& adj_alpha, const A& a, const B& b, const D& adj_out) {
    constexpr int K = A::shape::extent(1), N = B::shape::extent(1);
    typedef typename detail::matmul_acc_of<typename D::value_type>::type Acc;
#if !TW_IS_CUDA
    if constexpr (detail::host_vec<Acc>::ok) {
        detail::host_gemm<A::shape::extent(0), N, K, Acc>(
            detail::host_operand_of<false, Acc>(a), detail::host_operand_of<false, Acc>(b),
            [&](int i, int j0, const Acc* v, int n) {
                for (int j = 0; j < n; ++j) adj_alpha = add(adj_alpha, cast<V>(mul(v[j], cast<Acc>(detail::host_at(adj_out, i, j0 + j)))));
            });
        return;
    }
#endif
    block_sync();
    TW_FOR_OWNED(D::size, D::threads, r, e) {
        const int i = e / N, j = e % N;
        Acc acc = Acc();
        for (int k = 0; k < K; ++k)
            acc = add(acc, mul(cast<Acc>(a.at(i * K + k, i * K + k)), cast<Acc>(b.at(k * N + j, k * N + j))));
        adj_alpha = add(adj_alpha, cast<V>(mul(acc, cast<Acc>(adj_out.at(r, e)))));
    }
}
template <typename V, typename C, typename D>
TW_FUNC void adj_tile_matmul_beta(V& adj_beta, const C& c, const D& adj_out) {
    block_sync();
    TW_FOR_OWNED(D::size, D::threads, r, e) adj_beta = add(adj_beta, cast<V>(mul(c.at(r, e), adj_out.at(r, e))));
}
}  // namespace tw

// ---- t[idx, :]: a copy gathering along `Axis` the entries a 1-d integer tile names (negative
// indices count from the end; repeats allowed, their gradients add up)
namespace tw {
template <int Axis, typename D, typename X, typename I> TW_FUNC int gather_source(int e, const I& idx) {
    typedef typename D::shape SD;
    typedef typename X::shape SX;
    int src = 0;
    for (int k = 0; k < SD::ndim; ++k) {
        int c = (e / SD::stride(k)) % SD::extent(k);
        if (k == Axis) {
            c = (int)idx.at(c, c);
            if (c < 0) c += SX::extent(k);
        }
        src += c * SX::stride(k);
    }
    return src;
}
template <int Axis, typename D, typename X, typename I> TW_FUNC void tile_gather(D& out, const X& t, const I& idx) {
    block_sync();
    tile_fill_with(out, [&](int, int e) {
        const int s = gather_source<Axis, D, X>(e, idx);
        return t.at(s, s);
    });
}
template <int Axis, typename X, typename I, typename D> TW_FUNC void adj_tile_gather(X& adj_t, const I& idx, const D& adj_out) {
    tile_for<D::size, D::threads>([&](int r, int e) {
        const int s = gather_source<Axis, D, X>(e, idx);
        detail::block_accum(&adj_t.at(s, s), adj_out.at(r, e));
    });
}
}  // namespace tw

// ---- print(t): lane 0 prints the whole tile, nested brackets per dimension, then its shape and storage
namespace tw {
namespace detail {
TW_FUNC void print_elem(float x) { ::printf("%g", (double)x); }
TW_FUNC void print_elem(double x) { ::printf("%g", x); }
TW_FUNC void print_elem(half x) { ::printf("%g", (double)(float)x); }
TW_FUNC void print_elem(bfloat16 x) { ::printf("%g", (double)(float)x); }
TW_FUNC void print_elem(bool x) { ::printf("%s", x ? "True" : "False"); }
TW_FUNC void print_elem(int8_t x) { ::printf("%d", (int)x); }
TW_FUNC void print_elem(int16_t x) { ::printf("%d", (int)x); }
TW_FUNC void print_elem(int32_t x) { ::printf("%d", x); }
TW_FUNC void print_elem(int64_t x) { ::printf("%lld", (long long)x); }
TW_FUNC void print_elem(uint8_t x) { ::printf("%u", (unsigned)x); }
TW_FUNC void print_elem(uint16_t x) { ::printf("%u", (unsigned)x); }
TW_FUNC void print_elem(uint32_t x) { ::printf("%u", x); }
TW_FUNC void print_elem(uint64_t x) { ::printf("%llu", (unsigned long long)x); }
template <int N, typename T> TW_FUNC void print_elem(const vec_t<N, T>& v) {
    ::printf("[");
    for (int i = 0; i < N; ++i) {
        if (i) ::printf(" ");
        print_elem(v.c[i]);
    }
    ::printf("]");
}
template <int R, int C, typename T> TW_FUNC void print_elem(const mat_t<R, C, T>& m) {
    ::printf("[");
    for (int i = 0; i < R; ++i) {
        if (i) ::printf(" ");
        print_elem(*(const vec_t<C, T>*)m.c[i]);
    }
    ::printf("]");
}
}  // namespace detail

template <typename X> TW_FUNC void tile_print(const X& t) {
    typedef typename X::value_type T;
    typedef typename X::shape S;
#if TW_IS_CUDA
    TW_SCRATCH(unsigned char, raw, sizeof(T));
#endif
    block_sync();
    for (int e = 0; e < S::size; ++e) {
#if TW_IS_CUDA
        if (!X::shared) {  // a register element is in its owner's registers: through shared memory
            if (lane_index() == e % X::threads) *(T*)raw = t.at(e / X::threads, e);
            block_sync();
        }
        const T v = X::shared ? t.at(e, e) : *(const T*)raw;
#else
        const T v = t.at(e, e);
#endif
        if (lane_index() == 0) {
            if (e > 0) {
                int closing = 0;
                for (int k = 0; k < S::ndim - 1; ++k)
                    if (e % S::stride(k) == 0) ++closing;
                ::printf(closing ? "" : " ");
                for (int k = 0; k < closing; ++k) ::printf("]");
                if (closing) {
                    ::printf("\n");
                    for (int k = 0; k < S::ndim - closing; ++k) ::printf(" ");
                }
            }
            int starting = e == 0 ? S::ndim : 0;
            if (e > 0)
                for (int k = 0; k < S::ndim - 1; ++k)
                    if (e % S::stride(k) == 0) ++starting;
            for (int k = 0; k < starting; ++k) ::printf("[");
            detail::print_elem(v);
        }
#if TW_IS_CUDA
        if (!X::shared) block_sync();
#endif
    }
    if (lane_index() == 0) {
        ::printf("]");
        for (int k = 1; k < S::ndim; ++k) ::printf("]");
        ::printf(" = tile(shape=(");
        for (int k = 0; k < S::ndim; ++k) ::printf(k ? ",%d" : "%d", S::extent(k));
        ::printf("), storage=%s)\n", X::shared ? "shared" : "register");
    }
    block_sync();
}
}  // namespace tw
