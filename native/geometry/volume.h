// wp.Volume in kernels: sampling, lookups, stores, index grids and the index <-> world transforms.
//
// A volume id is the address (host or device, where the volume lives) of a NanoVDB grid buffer,
// read in place: grid header (672 bytes), tree header (64 bytes), then the root, upper (32^3
// children), lower (16^3 children) and leaf (8^3 voxels) nodes. tilewarp/geometry/nanovdb.py
// describes the format; the node layouts here follow the same rules (`layout_of`, its twin
// `nanovdb.layout`), derived from the value type's size, alignment and statistics size.
//
// Semantics (Warp's): a typed read of a grid of another type gives zero (and a debug build
// reports it); a coordinate outside the leaves reads the enclosing tile's value or the root's
// background; CLOSEST rounds half away from zero; LINEAR is trilinear over the 8 voxels around
// uvw, with weights in single precision. Index grids map each voxel of a leaf to a 1-based index
// (0: none), which volume_lookup_index reports 0-based (-1: none) and volume_sample_index reads
// from a user array (its background where there is none). Gradients flow to uvw (LINEAR), to the
// voxel array and the background of the index forms, and through the transforms (transposed maps).
#pragma once

namespace tw {
namespace vdb {

constexpr uint32_t GRID_SIZE = 672;
constexpr uint32_t TREE = GRID_SIZE;  // the tree header follows the grid header
constexpr uint32_t OFF_GRID_TYPE = 636, OFF_MAP = 296;
constexpr int CLOSEST = 0, LINEAR = 1;

enum : uint32_t {
    T_FLOAT = 1, T_DOUBLE = 2, T_INT32 = 4, T_INT64 = 5, T_VEC3F = 6, T_VEC3D = 7, T_UINT32 = 10,
    T_FPN = 16, T_VEC4F = 17, T_VEC4D = 18, T_INDEX = 19, T_ONINDEX = 20, T_INDEXMASK = 21, T_ONINDEXMASK = 22,
    T_END = 27
};

template <typename U> TW_FUNC U rd(const uint8_t* g, uint64_t at) { return *reinterpret_cast<const U*>(g + at); }
TW_FUNC uint32_t up(uint32_t n, uint32_t a) { return (n + a - 1) / a * a; }
TW_FUNC uint32_t grid_type(const uint8_t* g) { return rd<uint32_t>(g, OFF_GRID_TYPE); }

TW_FUNC int popcount64(uint64_t x) {
#if TW_IS_CUDA
    return __popcll(x);
#else
    return __builtin_popcountll(x);
#endif
}

// The node layout of a grid type (nanovdb.layout).
struct layout_t {
    uint32_t value, background, root_size, tile_value, tile_size, stride, upper_table, lower_table;
    uint32_t leaf_table, leaf_size;
};

TW_FUNC uint32_t stats_end(uint32_t start, uint32_t size, uint32_t align, uint32_t stats) {
    return up(up(start, align) + 2 * size, stats) + 2 * stats;
}

TW_FUNC layout_t layout_of(uint32_t code) {
    // size, align, stats size per type code (0: unknown); leaf kinds are told apart by code below
    const uint8_t sizes[T_END] = {0, 4, 8, 2, 4, 8, 12, 24, 1, 2, 4, 1, 4, 4, 4, 4, 4, 16, 32, 8, 8, 8, 8, 8, 3, 6, 1};
    const uint8_t aligns[T_END] = {1, 4, 8, 2, 4, 8, 4, 8, 1, 2, 4, 1, 4, 4, 4, 4, 4, 4, 8, 8, 8, 8, 8, 8, 1, 2, 1};
    const uint8_t stats[T_END] = {1, 4, 8, 4, 4, 8, 4, 8, 1, 4, 4, 1, 4, 4, 4, 4, 4, 4, 8, 8, 8, 8, 8, 8, 4, 4, 4};
    if (code >= T_END) code = 0;
    const uint32_t s = sizes[code], a = aligns[code], st = stats[code];
    layout_t L;
    L.value = s;
    L.background = up(28, a);
    L.root_size = up(stats_end(L.background + s, s, a, st), 32);
    L.tile_value = up(20, a);
    L.tile_size = up(L.tile_value + s, 32);
    L.stride = up(s > 8 ? s : 8, 8);
    L.upper_table = up(stats_end(32 + 2 * 4096, s, a, st), 32);
    L.lower_table = up(stats_end(32 + 2 * 512, s, a, st), 32);
    if (code == 8 || code == 11) {  // mask / bool leaves
        L.leaf_table = 96, L.leaf_size = code == 8 ? 96 : 160;
    } else if (code >= 13 && code <= 16) {  // quantised floats (FpN: a size per leaf)
        L.leaf_table = 96, L.leaf_size = code == T_FPN ? 0 : 96 + 512 * (code == 13 ? 4 : code == 14 ? 8 : 16) / 8;
    } else if (code == 23) {  // point index
        L.leaf_table = 96, L.leaf_size = 96 + 2 * 512;
    } else if (code >= T_INDEX && code <= T_ONINDEXMASK) {
        L.leaf_table = 80, L.leaf_size = code <= T_ONINDEX ? 96 : 160;
    } else {
        L.leaf_table = up(stats_end(80, s, a, st), 32);
        L.leaf_size = up(L.leaf_table + 512 * s, 32);
    }
    return L;
}

// Where the value of a voxel lives: `at` (a byte offset from the grid) is the leaf slot (level 0),
// a lower / upper tile (1 / 2), a root tile value (3) or the root background (4); `leaf` and `n`
// locate the voxel in its leaf (level 0 only).
struct hit_t {
    uint64_t at;
    uint64_t leaf;
    uint32_t n;
    int level;
};

TW_FUNC bool bit(const uint8_t* g, uint64_t mask, uint32_t n) {
    return (rd<uint32_t>(g, mask + 4 * (n >> 5)) >> (n & 31)) & 1u;
}

// Finds a voxel from the root down, remembering the last leaf so that neighbouring reads (the 8
// corners of a trilinear sample) skip the descent.
struct cursor_t {
    const uint8_t* g;
    layout_t L;
    int32_t ox, oy, oz;
    uint64_t leaf;  // 0: none cached

    TW_FUNC cursor_t(const uint8_t* grid, uint32_t code) : g(grid), L(layout_of(code)), ox(0), oy(0), oz(0), leaf(0) {}

    TW_FUNC hit_t find(int32_t i, int32_t j, int32_t k) {
        const uint32_t n = (uint32_t)(i & 7) << 6 | (uint32_t)(j & 7) << 3 | (uint32_t)(k & 7);
        if (leaf && (i & ~7) == ox && (j & ~7) == oy && (k & ~7) == oz)
            return {leaf + L.leaf_table + n * L.value, leaf, n, 0};
        const uint64_t root = TREE + rd<uint64_t>(g, TREE + 24);
        const uint32_t tiles = rd<uint32_t>(g, root + 24);
        const uint64_t key =
            (uint64_t)((uint32_t)i >> 12) << 42 | (uint64_t)((uint32_t)j >> 12) << 21 | ((uint32_t)k >> 12);
        uint64_t tile = root + L.root_size;
        uint32_t t = 0;
        for (; t < tiles; ++t, tile += L.tile_size)
            if (rd<uint64_t>(g, tile) == key) break;
        if (t == tiles) return {root + L.background, 0, 0, 4};
        const int64_t child = rd<int64_t>(g, tile + 8);
        if (child == 0) return {tile + L.tile_value, 0, 0, 3};
        const uint64_t upper = root + child;
        const uint32_t nu =
            (uint32_t)(i & 4095) >> 7 << 10 | (uint32_t)(j & 4095) >> 7 << 5 | (uint32_t)(k & 4095) >> 7;
        const uint64_t uslot = upper + L.upper_table + (uint64_t)nu * L.stride;
        if (!bit(g, upper + 32 + 4096, nu)) return {uslot, 0, 0, 2};
        const uint64_t lower = upper + rd<int64_t>(g, uslot);
        const uint32_t nl = (uint32_t)(i & 127) >> 3 << 8 | (uint32_t)(j & 127) >> 3 << 4 | (uint32_t)(k & 127) >> 3;
        const uint64_t lslot = lower + L.lower_table + (uint64_t)nl * L.stride;
        if (!bit(g, lower + 32 + 512, nl)) return {lslot, 0, 0, 1};
        leaf = lower + rd<int64_t>(g, lslot);
        ox = i & ~7, oy = j & ~7, oz = k & ~7;
        return {leaf + L.leaf_table + n * L.value, leaf, n, 0};
    }
};

// The 1-based index of a leaf voxel (0: none): index grids store it, value grids number every
// voxel of every leaf in leaf order.
TW_FUNC uint64_t voxel_index(const uint8_t* g, const layout_t& L, uint32_t code, const hit_t& h) {
    if (code == T_INDEX || code == T_INDEXMASK) return rd<uint64_t>(g, h.leaf + 80) + h.n;
    if (code == T_ONINDEX || code == T_ONINDEXMASK) {
        const uint32_t w = h.n >> 6;
        const uint64_t mask = rd<uint64_t>(g, h.leaf + 16 + 8 * w), b = (uint64_t)1 << (h.n & 63);
        if (!(mask & b)) return 0;
        uint32_t before = popcount64(mask & (b - 1));
        if (w > 0) before += (uint32_t)(rd<uint64_t>(g, h.leaf + 88) >> (9 * (w - 1))) & 511u;
        return rd<uint64_t>(g, h.leaf + 80) + before;
    }
    if (L.leaf_size == 0) return 0;
    const uint64_t first = TREE + rd<uint64_t>(g, TREE);
    return (h.leaf - first) / L.leaf_size * 512 + h.n + 1;
}

// ---- value types ------------------------------------------------------------------------------

template <typename T> struct traits;
#define TW_VDB_SCALAR(T, CODE, ACC)                                                         \
    template <> struct traits<T> {                                                          \
        static constexpr uint32_t code = CODE;                                              \
        static constexpr bool integer = (T)0.5 == (T)0;                                     \
        typedef T scalar;                                                                   \
        typedef vec_t<3, T> grad;                                                           \
        typedef ACC acc; /* accumulator of a trilinear sum (integers: double, rounded) */   \
    };
TW_VDB_SCALAR(float, T_FLOAT, float)
TW_VDB_SCALAR(double, T_DOUBLE, double)
TW_VDB_SCALAR(int32_t, T_INT32, double)
TW_VDB_SCALAR(int64_t, T_INT64, double)
TW_VDB_SCALAR(uint32_t, T_UINT32, double)
#undef TW_VDB_SCALAR
#define TW_VDB_VECTOR(N, S, CODE)                                                           \
    template <> struct traits<vec_t<N, S>> {                                                \
        static constexpr uint32_t code = CODE;                                              \
        static constexpr bool integer = false;                                              \
        typedef S scalar;                                                                   \
        typedef mat_t<N, 3, S> grad;                                                        \
        typedef vec_t<N, S> acc;                                                            \
    };
TW_VDB_VECTOR(3, float, T_VEC3F)
TW_VDB_VECTOR(3, double, T_VEC3D)
TW_VDB_VECTOR(4, float, T_VEC4F)
TW_VDB_VECTOR(4, double, T_VEC4D)
#undef TW_VDB_VECTOR

// Componentwise helpers over scalars and vectors (one spelling for both in the samplers below).
template <typename T> TW_FUNC int width(const T&) { return 1; }
template <int N, typename S> TW_FUNC int width(const vec_t<N, S>&) { return N; }
template <typename T> TW_FUNC T& comp(T& v, int) { return v; }
template <typename T> TW_FUNC const T& comp(const T& v, int) { return v; }
template <int N, typename S> TW_FUNC S& comp(vec_t<N, S>& v, int r) { return v.c[r]; }
template <int N, typename S> TW_FUNC const S& comp(const vec_t<N, S>& v, int r) { return v.c[r]; }
template <typename S> TW_FUNC S& grad_at(vec_t<3, S>& g, int, int b) { return g.c[b]; }
template <int N, typename S> TW_FUNC S& grad_at(mat_t<N, 3, S>& g, int r, int b) { return g.c[r][b]; }
template <typename S> TW_FUNC S grad_at(const vec_t<3, S>& g, int, int b) { return g.c[b]; }
template <int N, typename S> TW_FUNC S grad_at(const mat_t<N, 3, S>& g, int r, int b) { return g.c[r][b]; }

template <typename T, typename A> TW_FUNC T from_acc(const A& a) {
    T out{};
    for (int r = 0; r < width(out); ++r) {
        const double x = (double)comp(a, r);
        // integers round to the nearest value of the interpolant
        comp(out, r) = (typename traits<T>::scalar)(traits<T>::integer ? (x < 0 ? x - 0.5 : x + 0.5) : x);
    }
    return out;
}

// A coordinate from a sample position: saturated to int32, NaN far outside any grid.
TW_FUNC int32_t to_coord(float x) {
    if (!(x == x)) return -2147483647 - 1;
    if (x >= 2147483520.0f) return 2147483647;
    if (x <= -2147483648.0f) return -2147483647 - 1;
    return (int32_t)x;
}

// The 8 corners of the cell holding uvw: corner c is offset (c >> 2 & 1, c >> 1 & 1, c & 1).
struct cell_t {
    int32_t i, j, k;
    float w[3][2];  // per axis: weight of the low and high corner

    TW_FUNC explicit cell_t(const vec_t<3, float>& uvw) {
        int32_t* base[3] = {&i, &j, &k};
        for (int a = 0; a < 3; ++a) {
            const float f = floor(uvw.c[a]);
            *base[a] = to_coord(f);
            const float t = uvw.c[a] - f;
            w[a][0] = 1.0f - t, w[a][1] = t;
        }
    }
    TW_FUNC int32_t at(int32_t base, int c, int axis) const {
        return (int32_t)((uint32_t)base + (uint32_t)((c >> (2 - axis)) & 1));
    }
    TW_FUNC float weight(int c) const { return w[0][c >> 2 & 1] * w[1][c >> 1 & 1] * w[2][c & 1]; }
    // d weight / d uvw
    TW_FUNC vec_t<3, float> dweight(int c) const {
        const int x = c >> 2 & 1, y = c >> 1 & 1, z = c & 1;
        const float sx = x ? 1.0f : -1.0f, sy = y ? 1.0f : -1.0f, sz = z ? 1.0f : -1.0f;
        vec_t<3, float> d;
        d.c[0] = sx * w[1][y] * w[2][z], d.c[1] = w[0][x] * sy * w[2][z], d.c[2] = w[0][x] * w[1][y] * sz;
        return d;
    }
    // d^2 weight / d uvw_a d uvw_b (zero on the diagonal: the weight is linear along each axis)
    TW_FUNC float ddweight(int c, int a, int b) const {
        if (a == b) return 0.0f;
        const int o[3] = {c >> 2 & 1, c >> 1 & 1, c & 1};
        const int third = 3 - a - b;
        return (o[a] ? 1.0f : -1.0f) * (o[b] ? 1.0f : -1.0f) * w[third][o[third]];
    }
};

// ---- readers: where the samplers get voxel values (and send their adjoints) --------------------

// The grid's own values (a typed grid; other types read as zero).
template <typename T> struct grid_reader {
    typedef T value;
    cursor_t cur;
    bool ok;

    TW_FUNC explicit grid_reader(uint64_t id)
        : cur((const uint8_t*)id, traits<T>::code),
          ok(id != 0 && grid_type((const uint8_t*)id) == traits<T>::code) {
        TW_ASSERT(ok);  // a null id, or a grid of another value type than the kernel asks for
    }
    TW_FUNC T read(int32_t i, int32_t j, int32_t k) { return rd<T>(cur.g, cur.find(i, j, k).at); }
    TW_FUNC void adj(int32_t, int32_t, int32_t, const T&) {}  // the grid's values are constants
};

// Values of a user array indexed by the grid's voxel indices, the background elsewhere.
template <typename T> struct index_reader {
    typedef T value;
    cursor_t cur;
    uint32_t code;
    const array_t<T, 1>& data;
    const T& background;
    const array_t<T, 1>* adj_data;
    T* adj_background;
    bool ok;

    TW_FUNC index_reader(uint64_t id, const array_t<T, 1>& d, const T& bg, const array_t<T, 1>* ad = nullptr,
                         T* abg = nullptr)
        : cur((const uint8_t*)id, id ? grid_type((const uint8_t*)id) : 0), code(id ? grid_type((const uint8_t*)id) : 0),
          data(d), background(bg), adj_data(ad), adj_background(abg), ok(id != 0) {
        TW_ASSERT(ok);
    }
    // the 0-based element of `data` for a voxel, -1 for the background
    TW_FUNC int64_t element(int32_t i, int32_t j, int32_t k) {
        const hit_t h = cur.find(i, j, k);
        if (h.level != 0) return -1;
        const uint64_t index = voxel_index(cur.g, cur.L, code, h);
        if (index == 0) return -1;
        const bool inside = index - 1 < (uint64_t)data.shape[0];
        TW_ASSERT(inside);  // voxel_data holds fewer elements than the grid has indexed voxels
        return inside ? (int64_t)(index - 1) : -1;
    }
    TW_FUNC static T* at(const array_t<T, 1>& a, int64_t e) { return (T*)((char*)a.data + e * a.strides[0]); }
    TW_FUNC T read(int32_t i, int32_t j, int32_t k) {
        const int64_t e = element(i, j, k);
        return e < 0 ? background : *at(data, e);
    }
    TW_FUNC void adj(int32_t i, int32_t j, int32_t k, const T& g) {
        const int64_t e = element(i, j, k);
        if (e < 0) {
            *adj_background = add(*adj_background, g);
        } else if (adj_data && adj_data->data) {
            atomic_add(at(*adj_data, e), g);
        }
    }
};

// ---- samplers (one code path for both readers, so a grid and its index twin agree bitwise) -----

TW_FUNC vec_t<3, int32_t> closest(const vec_t<3, float>& uvw) {
    vec_t<3, int32_t> c;
    for (int a = 0; a < 3; ++a) c.c[a] = to_coord(round(uvw.c[a]));  // half away from zero
    return c;
}

template <typename R> TW_FUNC typename R::value read_corner(R& r, const cell_t& cell, int c) {
    return r.read(cell.at(cell.i, c, 0), cell.at(cell.j, c, 1), cell.at(cell.k, c, 2));
}

TW_FUNC bool valid_mode(int32_t mode) {
    const bool ok = mode == CLOSEST || mode == LINEAR;
    TW_ASSERT(ok);  // sampling_mode is neither Volume.CLOSEST nor Volume.LINEAR
    return ok;
}

// The value at uvw, and with `grad` its derivative with respect to uvw (zero under CLOSEST).
template <typename R, typename G>
TW_FUNC typename R::value sample(R& r, const vec_t<3, float>& uvw, int32_t mode, G* grad) {
    typedef typename R::value T;
    if (grad) *grad = G();
    if (!r.ok || !valid_mode(mode)) return T();
    if (mode == CLOSEST) {
        const vec_t<3, int32_t> c = closest(uvw);
        return r.read(c.c[0], c.c[1], c.c[2]);
    }
    const cell_t cell(uvw);
    typename traits<T>::acc acc = typename traits<T>::acc();
    for (int c = 0; c < 8; ++c) {
        const T v = read_corner(r, cell, c);
        const float w = cell.weight(c);
        for (int q = 0; q < width(v); ++q) comp(acc, q) += w * comp(v, q);
        if (grad) {
            const vec_t<3, float> dw = cell.dweight(c);
            for (int q = 0; q < width(v); ++q)
                for (int b = 0; b < 3; ++b) grad_at(*grad, q, b) += comp(v, q) * dw.c[b];
        }
    }
    return from_acc<T>(acc);
}

// Adjoint of `sample`: adj_value of the value, adj_grad (or null) of the gradient.
template <typename R, typename G>
TW_FUNC void adj_sample(R& r, const vec_t<3, float>& uvw, int32_t mode, vec_t<3, float>& adj_uvw,
                        const typename R::value& adj_value, const G* adj_grad) {
    typedef typename R::value T;
    typedef typename traits<T>::scalar S;
    if (!r.ok || !valid_mode(mode)) return;
    if (mode == CLOSEST) {  // piecewise constant in uvw: only the voxel read gets a gradient
        const vec_t<3, int32_t> c = closest(uvw);
        r.adj(c.c[0], c.c[1], c.c[2], adj_value);
        return;
    }
    const cell_t cell(uvw);
    for (int c = 0; c < 8; ++c) {
        const T v = read_corner(r, cell, c);
        const float w = cell.weight(c);
        const vec_t<3, float> dw = cell.dweight(c);
        S along = S();  // v . adj_value
        T adj_v = T();
        for (int q = 0; q < width(v); ++q) {
            along += comp(v, q) * comp(adj_value, q);
            comp(adj_v, q) = (S)(w * comp(adj_value, q));
        }
        for (int a = 0; a < 3; ++a) {
            S d = along * (S)dw.c[a];
            if (adj_grad)  // the gradient's own derivative: the weights' mixed second derivatives
                for (int q = 0; q < width(v); ++q)
                    for (int b = 0; b < 3; ++b) d += grad_at(*adj_grad, q, b) * comp(v, q) * (S)cell.ddweight(c, b, a);
            adj_uvw.c[a] += (float)d;
        }
        if (adj_grad)
            for (int q = 0; q < width(v); ++q)
                for (int b = 0; b < 3; ++b) comp(adj_v, q) += grad_at(*adj_grad, q, b) * (S)dw.c[b];
        r.adj(cell.at(cell.i, c, 0), cell.at(cell.j, c, 1), cell.at(cell.k, c, 2), adj_v);
    }
}

// The grid's map: the linear part (row-major) and its inverse, the translation; float and double.
template <typename S> struct map_at;
template <> struct map_at<float> {
    static TW_FUNC float mat(const uint8_t* g, bool inv, int r, int c) {
        return rd<float>(g, OFF_MAP + (inv ? 36 : 0) + 4 * (3 * r + c));
    }
    static TW_FUNC float vec(const uint8_t* g, int a) { return rd<float>(g, OFF_MAP + 72 + 4 * a); }
};
template <> struct map_at<double> {
    static TW_FUNC double mat(const uint8_t* g, bool inv, int r, int c) {
        return rd<double>(g, OFF_MAP + 88 + (inv ? 72 : 0) + 8 * (3 * r + c));
    }
    static TW_FUNC double vec(const uint8_t* g, int a) { return rd<double>(g, OFF_MAP + 232 + 8 * a); }
};

// M x (inv: M^-1 x), or with `transpose` the transposed product (the adjoints')
template <typename S> TW_FUNC vec_t<3, S> map_apply(uint64_t id, bool inv, bool transpose, const vec_t<3, S>& x) {
    vec_t<3, S> out;
    TW_ASSERT(id != 0);
    if (!id) return out;
    const uint8_t* g = (const uint8_t*)id;
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c)
            out.c[r] += (transpose ? map_at<S>::mat(g, inv, c, r) : map_at<S>::mat(g, inv, r, c)) * x.c[c];
    return out;
}
template <typename S> TW_FUNC vec_t<3, S> translation(uint64_t id) {
    vec_t<3, S> t;
    if (id)
        for (int a = 0; a < 3; ++a) t.c[a] = map_at<S>::vec((const uint8_t*)id, a);
    return t;
}
}  // namespace vdb

// ---- the builtins -------------------------------------------------------------------------------

template <typename T> TW_FUNC T volume_sample(uint64_t id, const vec_t<3, float>& uvw, int32_t mode) {
    vdb::grid_reader<T> r(id);
    return vdb::sample(r, uvw, mode, (typename vdb::traits<T>::grad*)nullptr);
}
template <typename T, typename Id, typename Mode>
TW_FUNC void adj_volume_sample(uint64_t id, const vec_t<3, float>& uvw, int32_t mode, Id&,
                               vec_t<3, float>& adj_uvw, Mode&, const T& adj_ret) {
    vdb::grid_reader<T> r(id);
    vdb::adj_sample(r, uvw, mode, adj_uvw, adj_ret, (const typename vdb::traits<T>::grad*)nullptr);
}

// (value, gradient); the last argument is the caller's variable the gradient replaces (unused)
template <typename T, typename G = typename vdb::traits<T>::grad>
TW_FUNC tuple_t<T, G> volume_sample_grad(uint64_t id, const vec_t<3, float>& uvw, int32_t mode, const G&) {
    vdb::grid_reader<T> r(id);
    G grad;
    const T value = vdb::sample(r, uvw, mode, &grad);
    return make_tuple<T, G>(value, grad);
}
template <typename T, typename G, typename Id, typename Mode>
TW_FUNC void adj_volume_sample_grad(uint64_t id, const vec_t<3, float>& uvw, int32_t mode, const G&, Id&,
                                    vec_t<3, float>& adj_uvw, Mode&, G&, const tuple_t<T, G>& adj_ret) {
    vdb::grid_reader<T> r(id);
    vdb::adj_sample(r, uvw, mode, adj_uvw, get<0>(adj_ret), &get<1>(adj_ret));
}

template <typename T>
TW_FUNC T volume_sample_index(uint64_t id, const vec_t<3, float>& uvw, int32_t mode, const array_t<T, 1>& voxel_data,
                              const T& background) {
    vdb::index_reader<T> r(id, voxel_data, background);
    return vdb::sample(r, uvw, mode, (typename vdb::traits<T>::grad*)nullptr);
}
template <typename T, typename Id, typename Mode>
TW_FUNC void adj_volume_sample_index(uint64_t id, const vec_t<3, float>& uvw, int32_t mode,
                                     const array_t<T, 1>& voxel_data, const T& background, Id&,
                                     vec_t<3, float>& adj_uvw, Mode&, const array_t<T, 1>& adj_voxel_data,
                                     T& adj_background, const T& adj_ret) {
    vdb::index_reader<T> r(id, voxel_data, background, &adj_voxel_data, &adj_background);
    vdb::adj_sample(r, uvw, mode, adj_uvw, adj_ret, (const typename vdb::traits<T>::grad*)nullptr);
}

template <typename T, typename G = typename vdb::traits<T>::grad>
TW_FUNC tuple_t<T, G> volume_sample_grad_index(uint64_t id, const vec_t<3, float>& uvw, int32_t mode,
                                               const array_t<T, 1>& voxel_data, const T& background, const G&) {
    vdb::index_reader<T> r(id, voxel_data, background);
    G grad;
    const T value = vdb::sample(r, uvw, mode, &grad);
    return make_tuple<T, G>(value, grad);
}
template <typename T, typename G, typename Id, typename Mode>
TW_FUNC void adj_volume_sample_grad_index(uint64_t id, const vec_t<3, float>& uvw, int32_t mode,
                                          const array_t<T, 1>& voxel_data, const T& background, const G&, Id&,
                                          vec_t<3, float>& adj_uvw, Mode&, const array_t<T, 1>& adj_voxel_data,
                                          T& adj_background, G&, const tuple_t<T, G>& adj_ret) {
    vdb::index_reader<T> r(id, voxel_data, background, &adj_voxel_data, &adj_background);
    vdb::adj_sample(r, uvw, mode, adj_uvw, get<0>(adj_ret), &get<1>(adj_ret));
}

template <typename T> TW_FUNC T volume_lookup(uint64_t id, int32_t i, int32_t j, int32_t k) {
    vdb::grid_reader<T> r(id);
    return r.ok ? r.read(i, j, k) : T();
}

// Writes only where the grid stores the voxel (a leaf): stores never allocate.
template <typename T> TW_FUNC void volume_store(uint64_t id, int32_t i, int32_t j, int32_t k, const T& value) {
    vdb::grid_reader<T> r(id);
    if (!r.ok) return;
    const vdb::hit_t h = r.cur.find(i, j, k);
    if (h.level == 0) *(T*)((uint8_t*)id + h.at) = value;
}

TW_FUNC int32_t volume_lookup_index(uint64_t id, int32_t i, int32_t j, int32_t k) {
    TW_ASSERT(id != 0);
    if (!id) return -1;
    const uint8_t* g = (const uint8_t*)id;
    vdb::cursor_t cur(g, vdb::grid_type(g));
    const vdb::hit_t h = cur.find(i, j, k);
    if (h.level != 0) return -1;
    return (int32_t)((int64_t)vdb::voxel_index(g, cur.L, vdb::grid_type(g), h) - 1);
}

TW_FUNC int32_t volume_voxel_count(uint64_t id) {
    TW_ASSERT(id != 0);
    if (!id) return 0;
    const uint8_t* g = (const uint8_t*)id;
    const uint32_t code = vdb::grid_type(g);
    const uint64_t n = code == vdb::T_ONINDEX || code == vdb::T_ONINDEXMASK
                           ? vdb::rd<uint64_t>(g, vdb::TREE + 56)
                           : (uint64_t)vdb::rd<uint32_t>(g, vdb::TREE + 32) * 512;
    return n > 2147483647ull ? 2147483647 : (int32_t)n;
}

template <typename S> TW_FUNC vec_t<3, S> volume_index_to_world(uint64_t id, const vec_t<3, S>& uvw) {
    return add(vdb::map_apply(id, false, false, uvw), vdb::translation<S>(id));
}
template <typename S> TW_FUNC vec_t<3, S> volume_world_to_index(uint64_t id, const vec_t<3, S>& xyz) {
    return vdb::map_apply(id, true, false, sub(xyz, vdb::translation<S>(id)));
}
template <typename S> TW_FUNC vec_t<3, S> volume_index_to_world_dir(uint64_t id, const vec_t<3, S>& uvw) {
    return vdb::map_apply(id, false, false, uvw);
}
template <typename S> TW_FUNC vec_t<3, S> volume_world_to_index_dir(uint64_t id, const vec_t<3, S>& xyz) {
    return vdb::map_apply(id, true, false, xyz);
}
// Adjoints: the transposed linear part (Warp 1.19 applies the untransposed one, which is only
// right for symmetric maps).
template <typename S, typename Id>
TW_FUNC void adj_volume_index_to_world(uint64_t id, const vec_t<3, S>&, Id&, vec_t<3, S>& adj_uvw,
                                       const vec_t<3, S>& adj_ret) {
    adj_uvw = add(adj_uvw, vdb::map_apply(id, false, true, adj_ret));
}
template <typename S, typename Id>
TW_FUNC void adj_volume_world_to_index(uint64_t id, const vec_t<3, S>&, Id&, vec_t<3, S>& adj_xyz,
                                       const vec_t<3, S>& adj_ret) {
    adj_xyz = add(adj_xyz, vdb::map_apply(id, true, true, adj_ret));
}
template <typename S, typename Id>
TW_FUNC void adj_volume_index_to_world_dir(uint64_t id, const vec_t<3, S>& uvw, Id& adj_id,
                                           vec_t<3, S>& adj_uvw, const vec_t<3, S>& adj_ret) {
    adj_volume_index_to_world(id, uvw, adj_id, adj_uvw, adj_ret);
}
template <typename S, typename Id>
TW_FUNC void adj_volume_world_to_index_dir(uint64_t id, const vec_t<3, S>& xyz, Id& adj_id,
                                           vec_t<3, S>& adj_xyz, const vec_t<3, S>& adj_ret) {
    adj_volume_world_to_index(id, xyz, adj_id, adj_xyz, adj_ret);
}

}  // namespace tw
