// wp.HashGrid in kernels: hash_grid_query / hash_grid_query_next / hash_grid_point_id.
//
// A grid id is the address (host or device, where the grid lives) of a hash_grid_t that
// tilewarp/geometry/hash_grid.py writes after each build. Space is cut into cubic cells of edge
// `cell_width`; the cell (x, y, z) of a point is floor(p * (1 / cell_width)) per axis, clamped to int32,
// and it is stored in the physical cell (x mod dim_x, y mod dim_y, z mod dim_z), so the grid covers
// all of space with dim_x * dim_y * dim_z buckets. Points are sorted by bucket (then by group);
// cell_starts / cell_ends delimit each bucket's run of the sorted order.
//
// Cells are computed in double precision from every point precision, by one function shared by the
// build (_hash_grid_cell) and the queries: a point at distance <= r of a query point always lies in a
// cell the query visits (floor of a monotone scaling is monotone), negative coordinates included
// (floor, not truncation toward zero: NVIDIA/warp#1256). NaN goes to cell 0 and +-inf to the
// int32 edges, for points and queries alike.
#pragma once

namespace tw {

// Members are f_<field> as in the Python twin (tilewarp/builtins/hash_grid.py: HashGridDesc).
struct hash_grid_t {
    uint64_t f_point_ids;    // int32[num_points]: sorted position -> original point index
    uint64_t f_cell_starts;  // int32[cells]
    uint64_t f_cell_ends;    // int32[cells]
    uint64_t f_groups;       // int32[num_points]: group of each sorted point; 0 when built without groups
    double f_cell_width;
    int32_t f_dim_x, f_dim_y, f_dim_z;
    int32_t f_num_points;    // -1 until built or reserved
};

// What hash_grid_query returns and hash_grid_query_next advances (Python twin: HashGridQuery).
struct hash_grid_query_t {
    uint64_t f_grid;
    uint64_t f_ids;            // the grid's int32 point ids: each candidate reads one, with no detour
                               // through the grid's descriptor
    int32_t f_x0, f_y0, f_z0;  // first physical cell per axis
    int32_t f_nx, f_ny, f_nz;  // cells per axis (each physical cell at most once)
    int32_t f_i, f_j, f_k;     // the next cell to open, as offsets from the first
    int32_t f_cursor, f_end;   // the open run's remaining sorted points (one cell's, or on the CPU a row's)
    int32_t f_group, f_grouped;
};

namespace detail {
// floor(x * inv_w) as an int64 within int32's range; NaN -> 0. The build and the queries both take
// the cell this way, with inv_w = 1 / w worked out once (one division per point, not three): any
// monotone map shared by both keeps every point within r of a query in the cells the query visits.
TW_FUNC double floor_d(double x) {
#if TW_IS_CUDA
    return ::floor(x);
#else
    return std::floor(x);
#endif
}

TW_FUNC int64_t hash_cell(double x, double inv_w) {
    double c = x * inv_w;
    if (!(c == c)) return 0;
    c = floor_d(c);
    if (c < -2147483648.0) return -2147483647LL - 1;
    if (c > 2147483647.0) return 2147483647LL;
    return (int64_t)c;
}

TW_FUNC int32_t wrap_cell(int64_t c, int32_t n) {
    // a grid usually covers the scene: a coordinate already in [0, n) skips the division (tens of
    // cycles on either target)
    if ((uint64_t)c < (uint64_t)n) return (int32_t)c;
    int32_t m = (int32_t)c % n;  // c is within int32's range: a 32-bit division, several times faster
    return m < 0 ? m + n : m;
}

TW_FUNC const hash_grid_t& hash_grid_at(uint64_t id) { return *reinterpret_cast<const hash_grid_t*>(id); }

// The run of positions [lo, hi) in the sorted points whose group is `group` (groups sorted within a cell).
TW_FUNC void group_run(const int32_t* groups, int32_t& lo, int32_t& hi, int32_t group) {
    int32_t a = lo, b = hi;
    while (a < b) {  // first position with groups[p] >= group
        int32_t m = a + (b - a) / 2;
        if (groups[m] < group) a = m + 1; else b = m;
    }
    int32_t c = a, d = hi;
    while (c < d) {  // first position with groups[p] > group
        int32_t m = c + (d - c) / 2;
        if (groups[m] <= group) c = m + 1; else d = m;
    }
    lo = a, hi = c;
}

// First physical cell and cell count along one axis for the virtual cells [lo, hi].
TW_FUNC void hash_span(int64_t lo, int64_t hi, int32_t dim, int32_t& first, int32_t& count) {
    int64_t n = hi - lo + 1;
    if (n >= dim) {
        first = 0, count = dim;
    } else {
        first = wrap_cell(lo, dim), count = (int32_t)n;
    }
}
}  // namespace detail

// The bucket of point p in a grid of dims (dx, dy, dz) (the build's sort key).
// The cell of point p for a grid of cell width 1 / inv (the build passes the reciprocal, worked out
// once on the host as the queries work it out: the same double, so the same cells).
template <typename T>
TW_FUNC int32_t hash_grid_cell(const vec_t<3, T>& p, double inv, int32_t dx, int32_t dy, int32_t dz) {
    // The common case first, with one branch: a cell already inside the grid's first period on every
    // axis is its own bucket. The same floors as hash_cell (NaN fails the test, as do the values it
    // clamps), so the same buckets; the per-axis path below is several predicted branches per axis,
    // which dominated the build's key pass on the CPU.
    double fx = detail::floor_d((double)p.c[0] * inv);
    double fy = detail::floor_d((double)p.c[1] * inv);
    double fz = detail::floor_d((double)p.c[2] * inv);
    if ((fx >= 0.0) & (fx < (double)dx) & (fy >= 0.0) & (fy < (double)dy) & (fz >= 0.0) & (fz < (double)dz)) {
        return ((int32_t)fz * dy + (int32_t)fy) * dx + (int32_t)fx;
    }
    int32_t x = detail::wrap_cell(detail::hash_cell((double)p.c[0], inv), dx);
    int32_t y = detail::wrap_cell(detail::hash_cell((double)p.c[1], inv), dy);
    int32_t z = detail::wrap_cell(detail::hash_cell((double)p.c[2], inv), dz);
    return (z * dy + y) * dx + x;
}

template <typename T, typename R>
TW_FUNC hash_grid_query_t hash_grid_query(uint64_t id, const vec_t<3, T>& p, R radius, int32_t group,
                                          bool grouped) {
    hash_grid_query_t q = {};
    q.f_grid = id;
    q.f_ids = detail::hash_grid_at(id).f_point_ids;
    q.f_group = group, q.f_grouped = grouped;
    const hash_grid_t& g = detail::hash_grid_at(id);
    if (g.f_num_points <= 0) {  // nothing built: an empty query
        return q;
    }
    double r = (double)radius, inv = 1.0 / g.f_cell_width;
    int32_t* first[3] = {&q.f_x0, &q.f_y0, &q.f_z0};
    int32_t* count[3] = {&q.f_nx, &q.f_ny, &q.f_nz};
    int32_t dims[3] = {g.f_dim_x, g.f_dim_y, g.f_dim_z};
    for (int a = 0; a < 3; ++a) {
        double x = (double)p.c[a];
        int64_t lo = detail::hash_cell(x - r, inv), hi = detail::hash_cell(x + r, inv);
        if (!(x == x)) lo = hi = 0;  // a NaN query looks in cell 0, where NaN points are
        if (hi < lo) hi = lo;
        detail::hash_span(lo, hi, dims[a], *first[a], *count[a]);
    }
    return q;
}

template <typename T, typename R>
TW_FUNC hash_grid_query_t hash_grid_query(uint64_t id, const vec_t<3, T>& p, R radius) {
    return hash_grid_query(id, p, radius, 0, false);
}

template <typename T, typename R>
TW_FUNC hash_grid_query_t hash_grid_query(uint64_t id, const vec_t<3, T>& p, R radius, int32_t group) {
    return hash_grid_query(id, p, radius, group, true);
}

namespace detail {
// The sorted points of the m cells [cell, cell + m), consecutive buckets: one run [lo, hi), from the
// first non-empty cell's start to the last one's end, as the points are sorted by bucket (an empty
// cell holds 0, 0). Opening a row of cells at once takes a third of the cell changes of a usual
// query (3 cells a row), each of which costs a loop exit and the walk's bookkeeping.
TW_FUNC void hash_grid_row_run(const hash_grid_t& g, int32_t cell, int32_t m, int32_t& lo, int32_t& hi) {
    const int32_t* starts = reinterpret_cast<const int32_t*>(g.f_cell_starts);
    const int32_t* ends = reinterpret_cast<const int32_t*>(g.f_cell_ends);
    lo = 2147483647, hi = 0;  // no cell: an empty run
    for (int32_t t = 0; t < m; ++t) {
        int32_t s = starts[cell + t], e = ends[cell + t];
        if (s < e) {
            lo = lo < s ? lo : s;
            hi = e;
        }
    }
}

// Open the next non-empty run of the query's range; false when none is left (the slow path). A run
// is the rest of a row of cells up to the grid's x edge, where the row wraps to x = 0 (the cells of
// a grouped query one by one: each needs its group's part). The same points in the same order as
// opening the cells one by one.
TW_FUNC bool hash_grid_open_cell(hash_grid_query_t& q) {
    if (q.f_nx <= 0) return false;
    const hash_grid_t& g = hash_grid_at(q.f_grid);
    while (q.f_cursor >= q.f_end) {
        if (q.f_k >= q.f_nz) return false;
        int64_t x = (int64_t)q.f_x0 + q.f_i, y = (int64_t)q.f_y0 + q.f_j, z = (int64_t)q.f_z0 + q.f_k;
        int32_t m = q.f_nx - q.f_i;  // the cells left in the row
        if (x < g.f_dim_x) {
            int32_t to_edge = (int32_t)(g.f_dim_x - x);
            m = m < to_edge ? m : to_edge;
        } else {
            x -= g.f_dim_x;
        }
#if TW_IS_CUDA
        m = 1;  // a GPU thread opens cells one by one: whole rows measured 10% slower on an H200
#else
        if (q.f_grouped) m = 1;
#endif
        y -= y >= g.f_dim_y ? g.f_dim_y : 0;
        z -= z >= g.f_dim_z ? g.f_dim_z : 0;
        int32_t cell = (int32_t)((z * g.f_dim_y + y) * g.f_dim_x + x);
        hash_grid_row_run(g, cell, m, q.f_cursor, q.f_end);
        if (q.f_grouped && q.f_cursor < q.f_end) {
            group_run(reinterpret_cast<const int32_t*>(g.f_groups), q.f_cursor, q.f_end, q.f_group);
        }
        q.f_i += m;
        if (q.f_i == q.f_nx) {
            q.f_i = 0;
            if (++q.f_j == q.f_ny) q.f_j = 0, ++q.f_k;
        }
    }
    return true;
}
}  // namespace detail

// (found, the advanced query, the candidate's original index or `index` unchanged when done). Forced
// inline, so the query lives in registers across a loop (with the cell change marked noinline, the
// query went through memory and the CPU loop ran 5x slower).
TW_FORCEINLINE TW_FUNC tuple_t<bool, hash_grid_query_t, int32_t> hash_grid_query_next(hash_grid_query_t q,
                                                                                      int32_t index) {
    if (q.f_cursor >= q.f_end && !detail::hash_grid_open_cell(q)) {
        return make_tuple<bool, hash_grid_query_t, int32_t>(false, q, index);
    }
    index = reinterpret_cast<const int32_t*>(q.f_ids)[q.f_cursor++];
    // A point id is an index into the built points, never negative: saying so lets the caller's
    // `points[index]` drop its negative-index wrap (a compare and a select per candidate, and on the
    // CPU a register it would otherwise spill in the loop).
    if (index < 0) __builtin_unreachable();
    return make_tuple<bool, hash_grid_query_t, int32_t>(true, q, index);
}

// The original index of the point at position `index` of the grid's sorted order; -1 before a build.
TW_FUNC int32_t hash_grid_point_id(uint64_t id, int32_t index) {
    const hash_grid_t& g = detail::hash_grid_at(id);
    if (g.f_num_points < 0 || index < 0 || index >= g.f_num_points) return -1;
    return reinterpret_cast<const int32_t*>(g.f_point_ids)[index];
}

// ---- the CPU build's sort (tilewarp/geometry/hash_grid.py: _cpu_build) -------------------------
// Native loops rather than kernel code: they read and write the grid's own contiguous int32
// buffers through plain pointers, with their tables in registers' reach, which made the two
// passes 1.5-2x faster than the same loops written as kernels (no per-access index wrap, null
// test and stride). The partitions' data starts at offset n of the 2n-long key and id buffers.
namespace detail {
constexpr int32_t hash_grid_cpu_table = 2048;  // 1 << CPU_DIGIT_BITS (hash_grid.py): the most
                                               // partitions, and the most buckets in one
constexpr int32_t hash_grid_small_part = 16;   // partitions of at most this many points are sorted
                                               // by insertion (no table to clear and scan)
}  // namespace detail

// Points [begin, end) (one chunk, in order, so the partitions are stable): each one's bucket and
// index to its partition's (bucket >> low) next slot; hist[h * chunks + column] is the chunk's
// first slot in partition h (an exclusive scan of the counts in partition-major order).
TW_FUNC void hash_grid_partition(const array_t<int32_t, 1>& keys_a, const array_t<int32_t, 1>& ids_a,
                                 const array_t<int32_t, 1>& hist_a, int32_t n, int32_t begin, int32_t end,
                                 int32_t low, int32_t parts, int32_t chunks, int32_t column) {
    int32_t* keys = keys_a.data;
    int32_t* ids = ids_a.data;
    int32_t slots[detail::hash_grid_cpu_table];
    for (int32_t h = 0; h < parts; ++h) slots[h] = hist_a.data[h * chunks + column] + n;
    for (int32_t i = begin; i < end; ++i) {
        int32_t k = keys[i];
        int32_t p = slots[k >> low]++;
        keys[p] = k;
        ids[p] = i;
    }
}

namespace detail {
// A small partition [first, last): stable insertion sort by bucket straight into place, then runs.
TW_FUNC void hash_grid_sort_small(const int32_t* pk, const int32_t* pi, int32_t first, int32_t last, int32_t* keys,
                                  int32_t* ids, int32_t* starts, int32_t* ends) {
    for (int32_t j = first; j < last; ++j) {
        int32_t k = pk[j], id = pi[j], p = j;
        for (; p > first && keys[p - 1] > k; --p) keys[p] = keys[p - 1], ids[p] = ids[p - 1];
        keys[p] = k, ids[p] = id;
    }
    for (int32_t j = first; j < last; ++j) {
        if (j == first || keys[j - 1] != keys[j]) starts[keys[j]] = j;
        if (j == last - 1 || keys[j + 1] != keys[j]) ends[keys[j]] = j + 1;
    }
}
}  // namespace detail

// The partitions h that start in [lo, hi) of the partitioned points (hist[h * chunks] is where
// partition h starts): each counting-sorted by its buckets' low `low` bits into keys / ids [0, n),
// which gives each bucket's run [starts, ends) on the way.
TW_FUNC void hash_grid_sort_cells(const array_t<int32_t, 1>& keys_a, const array_t<int32_t, 1>& ids_a,
                                  const array_t<int32_t, 1>& hist_a, const array_t<int32_t, 1>& starts_a,
                                  const array_t<int32_t, 1>& ends_a, int32_t n, int32_t lo, int32_t hi, int32_t low,
                                  int32_t parts, int32_t chunks) {
    int32_t *keys = keys_a.data, *ids = ids_a.data, *starts = starts_a.data, *ends = ends_a.data;
    const int32_t *hist = hist_a.data, *pk = keys + n, *pi = ids + n;
    const int32_t width = 1 << low, mask = width - 1;
    int32_t slots[detail::hash_grid_cpu_table];
    for (int32_t h = 0; h < parts; ++h) {
        int32_t first = hist[h * chunks], last = h + 1 < parts ? hist[(h + 1) * chunks] : n;
        if (first < lo || first >= hi || first == last) continue;
        if (last - first <= detail::hash_grid_small_part) {
            detail::hash_grid_sort_small(pk, pi, first, last, keys, ids, starts, ends);
            continue;
        }
        for (int32_t d = 0; d < width; ++d) slots[d] = 0;
        for (int32_t j = first; j < last; ++j) ++slots[pk[j] & mask];
        int32_t pos = first, base = h * width;
        for (int32_t d = 0; d < width; ++d) {
            int32_t c = slots[d];
            slots[d] = pos;
            if (c) starts[base + d] = pos, ends[base + d] = pos + c;
            pos += c;
        }
        for (int32_t j = first; j < last; ++j) {
            int32_t k = pk[j];
            int32_t p = slots[k & mask]++;
            keys[p] = k;  // the sorted buckets, which name the cells the next build clears
            ids[p] = pi[j];
        }
    }
}

}  // namespace tw
