// The CPU's top-down builds for wp.Bvh / wp.Mesh trees: binned SAH (constructor="sah") and median
// splits by count (constructor="median"). They write the same build nodes as the LBVH (bvh.h), so
// the layout, group roots and refits that follow are the LBVH's own.
//
// Node numbering (Karras 2012's, which needs no counter and so lets subtrees build in parallel): a
// node over sorted positions [f, l] with f < l is internal node l if it is its parent's left child,
// f if it is the right child (the root, 0, counts as a right child); a single position k is leaf
// N-1+k. A subtree over [f, l] then numbers its internal nodes within [f, l] alone, so disjoint
// subtrees never touch each other's nodes. A run of at most leaf_size items (of one group) stops as
// a leaf (~f, l+1) in its internal node; the indices its subtree would have used, [f+1, l-1], are
// marked unused: links (0, 0) (not a leaf) and no parent. The leaves of its items name it as their
// parent, as under a collapsed LBVH node, which bvh_group_root and bvh_layout_count expect. A lean
// build (no ranges: a CPU tree with no groups, laid out serially, tilewarp/geometry/bvh.py Tree._lean)
// writes only the links and items the serial layout reads: the rest would be pages first touched
// for nothing, which on a fresh tree cost more than the writes.
//
// The build permutes a copy of the items' boxes (bvh_prim_t, 32 bytes, in the layout's node buffer,
// which the layout fills only afterwards). An SAH split bins the centres of its run into 16 bins
// along the axis of their largest extent, takes the bin boundary of least area(left) * count(left)
// + area(right) * count(right), and partitions the run in place, collecting both sides' centre
// bounds as it goes; a median split puts the half with the smaller centres along that axis left.
// Every pass is a linear sweep over the run. One task per thread takes nodes from a shared list,
// splits the big ones and lists their children, and builds the small ones whole.
//
// Robustness: centres that are NaN or infinite stay out of the bounds and fall in an end bin; a run
// whose SAH finds no split with items on both sides (all centres in one bin, costs that overflow)
// splits at its median by count instead, as does every run below depth SAH_MAX_DEPTH, so a tree is
// at most about 64 + log2(N) levels deep (the walks' stacks in bvh.h and mesh.h assume under 128).
// Every split leaves items on both sides, so every build ends.
//
// Groups: the items come sorted by group (the LBVH's keys, group id above the Morton code), and a
// run holding several groups splits at the group boundary nearest its middle, so each group ends
// up one subtree; runs inside one group split as above, which keeps the keys' group bits in step
// with the sorted order (bvh_group_root and the group runs read only those).
#pragma once
#include "bvh.h"

namespace tw {

// One item during the build; c = lo + hi (twice the centre) is what bins and splits compare. Each
// half loads as four floats; `zero` keeps the lower one's fourth lane a plain 0.
struct bvh_prim_t {
    float lo[3];
    float zero;
    float hi[3];
    int32_t item;
};
static_assert(sizeof(bvh_prim_t) == 32, "two items per 64-byte line");

// A node still to split: its build node, sorted run [first, last], depth, and (when `known`) the
// bounds of its items' finite centres (doubled, like bvh_prim_t's).
struct bvh_sah_work_t {
    int32_t node, first, last, depth;
    int32_t known;
    float lo[3], hi[3];
    int32_t unused;
};
static_assert(sizeof(bvh_sah_work_t) == 48, "tilewarp/geometry/bvh.py sizes the list at 12 ints a node");

namespace detail {
constexpr int SAH_BINS = 16;
constexpr int SAH_SMALL = 16;  // runs this short try every split (sah_small)
constexpr int SAH_MAX_DEPTH = 64;
constexpr int SAH_TASKS = 64;           // room in the shared list of nodes to split (sah_queue_t)
constexpr int32_t SAH_MIN_TASK = 4096;  // smaller nodes are built whole by the task that takes them
constexpr float SAH_HUGE = 3.402823466e+38f;

struct sah_ctx_t {
    bvh_prim_t* prims;
    int32_t* links;
    int32_t* parents;
    int32_t* ranges;
    int32_t* items;
    const uint64_t* keys;  // grouped trees: the group of each sorted position (bits 30..61), else null
    int32_t n, leaf_size;
    bool median;
};

TW_FUNC sah_ctx_t sah_ctx(const bvh_t& b, bool median, bool grouped) {
    sah_ctx_t c;
    c.prims = reinterpret_cast<bvh_prim_t*>(b.f_prims);
    c.links = bvh_i32w(b.f_links), c.parents = bvh_i32w(b.f_build_parents);
    c.ranges = bvh_i32w(b.f_ranges), c.items = bvh_i32w(b.f_items);
    c.keys = grouped ? reinterpret_cast<const uint64_t*>(b.f_keys) : nullptr;
    c.n = b.f_num_items, c.leaf_size = b.f_leaf_size, c.median = median;
    return c;
}

TW_FUNC int32_t run_size(const bvh_sah_work_t& w) { return w.last - w.first + 1; }

TW_FUNC uint64_t group_at(const sah_ctx_t& c, int32_t k) { return c.keys[k] >> 30; }
TW_FUNC bool one_group(const sah_ctx_t& c, int32_t f, int32_t l) {
    return !c.keys || group_at(c, f) == group_at(c, l);
}

// Four floats at once: the bins' and bounds' min / max are one instruction each on the CPU (and
// keep no chain of dependent scalar stores). The GPU never runs these builds; it only compiles them.
#if TW_IS_CUDA
struct f4_t {
    float v[4];
    TW_FUNC float operator[](int i) const { return v[i]; }
};
TW_FUNC f4_t f4_load(const float* p) { return f4_t{{p[0], p[1], p[2], p[3]}}; }
TW_FUNC f4_t f4_load3(const float* p) { return f4_t{{p[0], p[1], p[2], 0.0f}}; }
TW_FUNC void f4_store(float* p, const f4_t& v) {
    for (int i = 0; i < 4; ++i) p[i] = v[i];
}
TW_FUNC f4_t f4_splat(float x) { return f4_t{{x, x, x, x}}; }
TW_FUNC f4_t f4_min(const f4_t& a, const f4_t& b) {
    return f4_t{{fmin_(b[0], a[0]), fmin_(b[1], a[1]), fmin_(b[2], a[2]), fmin_(b[3], a[3])}};
}
TW_FUNC f4_t f4_max(const f4_t& a, const f4_t& b) {
    return f4_t{{fmax_(b[0], a[0]), fmax_(b[1], a[1]), fmax_(b[2], a[2]), fmax_(b[3], a[3])}};
}
TW_FUNC f4_t f4_add(const f4_t& a, const f4_t& b) { return f4_t{{a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3]}}; }
TW_FUNC bool f4_finite3(const f4_t& a) { return tw::isfinite(a[0]) && tw::isfinite(a[1]) && tw::isfinite(a[2]); }
#else
typedef float f4_t __attribute__((vector_size(16)));
typedef int32_t i4_t __attribute__((vector_size(16)));
TW_FUNC f4_t f4_load(const float* p) {
    f4_t v;
    __builtin_memcpy(&v, p, 16);
    return v;
}
TW_FUNC void f4_store(float* p, f4_t v) { __builtin_memcpy(p, &v, 16); }
// the first three, and 0 (no arithmetic on whatever the fourth float holds)
TW_FUNC f4_t f4_load3(const float* p) {
    f4_t v = f4_load(p);
    v[3] = 0.0f;
    return v;
}
TW_FUNC f4_t f4_splat(float x) { return f4_t{x, x, x, x}; }
// NaN in `a` keeps b: a NaN centre never enters the bounds it is folded into
TW_FUNC f4_t f4_min(f4_t a, f4_t b) { return a < b ? a : b; }
TW_FUNC f4_t f4_max(f4_t a, f4_t b) { return a > b ? a : b; }
TW_FUNC f4_t f4_add(f4_t a, f4_t b) { return a + b; }
TW_FUNC bool f4_finite3(f4_t a) {
    i4_t inf = ((i4_t)a & 0x7f800000) == 0x7f800000;  // lanes with the exponent all ones
#if defined(__SSE__)
    return (__builtin_ia32_movmskps((f4_t)inf) & 7) == 0;
#else
    return !(inf[0] | inf[1] | inf[2]);
#endif
}
#endif

// An item's halves: (lo, 0) and (hi, the item's bits), which only min / max ever see.
TW_FUNC const float* prim_floats(const bvh_prim_t& p) { return reinterpret_cast<const float*>(&p); }
TW_FUNC f4_t prim_lo(const bvh_prim_t& p) { return f4_load(prim_floats(p)); }
TW_FUNC f4_t prim_hi(const bvh_prim_t& p) { return f4_load(prim_floats(p) + 4); }

// In 16-byte halves: the next reads of the swapped items then forward from these stores.
TW_FUNC void swap_prims(bvh_prim_t& a, bvh_prim_t& b) {
    f4_t a0 = prim_lo(a), a1 = prim_hi(a), b0 = prim_lo(b), b1 = prim_hi(b);
    float* fa = reinterpret_cast<float*>(&a);
    float* fb = reinterpret_cast<float*>(&b);
    f4_store(fa, b0), f4_store(fa + 4, b1), f4_store(fb, a0), f4_store(fb + 4, a1);
}

// t clamped to [0, last], NaN to 0, truncated: branch free on x86 (the compiler makes branches of
// the portable spelling, which mispredict where the bins change).
TW_FUNC int bin_index(float t, int last) {
#if !TW_IS_CUDA && defined(__SSE__)
    f4_t v = {t, 0.0f, 0.0f, 0.0f};
    v = __builtin_ia32_maxss(v, f4_splat(0.0f));  // the second operand if either is NaN
    v = __builtin_ia32_minss(v, f4_splat((float)last));
    return __builtin_ia32_cvttss2si(v);
#else
    t = t > 0.0f ? t : 0.0f;
    return (int)(t < (float)last ? t : (float)last);
#endif
}

// Centre bounds: grown by finite centres only, so one NaN or infinite box cannot hide the spread
// of the others.
struct cbounds_t {
    f4_t lo, hi;
    TW_FUNC void clear() { lo = f4_splat(SAH_HUGE), hi = f4_splat(-SAH_HUGE); }
    TW_FUNC void grow(const bvh_prim_t& p) {
        f4_t c = f4_add(prim_lo(p), f4_load3(prim_floats(p) + 4));
        if (!f4_finite3(c)) return;
        lo = f4_min(c, lo), hi = f4_max(c, hi);
    }
};

TW_FUNC void set_bounds(bvh_sah_work_t& w, const cbounds_t& cb) {
    for (int a = 0; a < 3; ++a) w.lo[a] = cb.lo[a], w.hi[a] = cb.hi[a];
}

TW_FUNC void run_bounds(const sah_ctx_t& c, bvh_sah_work_t& w) {
    cbounds_t cb;
    cb.clear();
    for (int32_t k = w.first; k <= w.last; ++k) cb.grow(c.prims[k]);
    set_bounds(w, cb);
    w.known = 1;
}

// The axis of the centres' largest extent and that extent (<= 0 when they coincide or none is finite).
TW_FUNC int widest_axis(const bvh_sah_work_t& w, float& extent) {
    int axis = 0;
    extent = w.hi[0] - w.lo[0];
    for (int a = 1; a < 3; ++a) {
        float e = w.hi[a] - w.lo[a];
        if (e > extent) axis = a, extent = e;
    }
    return axis;
}

// ---- median split by count ----------------------------------------------------------------------

// Float order as unsigned order (NaN last), for the radix select.
TW_FUNC uint32_t order_key(float x) {
    uint32_t u = f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0xffffffffu;
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

TW_FUNC uint32_t prim_key(const bvh_prim_t& p, int axis) { return order_key(p.lo[axis] + p.hi[axis]); }

// Reorders [f, l] so its `rank` smallest keys (along `axis`) come first. Short runs are sorted;
// longer ones find the key of that rank by a radix select (four byte passes, linear whatever the
// values) and partition around it in three ways, so equal keys cost nothing extra.
TW_FUNC void select_by_key(const sah_ctx_t& c, int32_t f, int32_t l, int axis, int32_t rank) {
    bvh_prim_t* p = c.prims;
    if (l - f < 32) {
        for (int32_t i = f + 1; i <= l; ++i) {
            bvh_prim_t x = p[i];
            uint32_t kx = prim_key(x, axis);
            int32_t j = i;
            for (; j > f && prim_key(p[j - 1], axis) > kx; --j) p[j] = p[j - 1];
            p[j] = x;
        }
        return;
    }
    uint32_t prefix = 0, mask = 0;
    for (int shift = 24; shift >= 0; shift -= 8) {
        int32_t hist[256];
        for (int d = 0; d < 256; ++d) hist[d] = 0;
        for (int32_t k = f; k <= l; ++k) {
            uint32_t key = prim_key(p[k], axis);
            if ((key & mask) == prefix) ++hist[(key >> shift) & 255u];
        }
        uint32_t d = 0;
        for (; d < 255u && rank >= hist[d]; ++d) rank -= hist[d];
        prefix |= d << shift, mask |= 255u << shift;
    }
    int32_t lt = f, i = f, gt = l;
    while (i <= gt) {
        uint32_t key = prim_key(p[i], axis);
        if (key < prefix) {
            swap_prims(p[lt++], p[i++]);
        } else if (key > prefix) {
            swap_prims(p[i], p[gt--]);
        } else {
            ++i;
        }
    }
}

// The median split by count along `axis` (centre bounds base + [0, extent) there): the first half
// of [f, l] in the order (bin of 256 across the bounds, key) goes left; returns its last position
// and both sides' centre bounds. One pass counts the bins, one partitions around the median's bin
// (the others' sides are known), and only that bin's items are selected among.
TW_FUNC int32_t median_split(const sah_ctx_t& c, int32_t f, int32_t l, int axis, float base, float extent,
                             cbounds_t& left, cbounds_t& right) {
    bvh_prim_t* p = c.prims;
    int32_t m = l - f + 1, mid = f + m / 2;
    float scale = extent > 0.0f ? 256.0f / extent : 0.0f;
    int32_t hist[256];
    for (int d = 0; d < 256; ++d) hist[d] = 0;
    for (int32_t k = f; k <= l; ++k) ++hist[bin_index((p[k].lo[axis] + p[k].hi[axis] - base) * scale, 255)];
    int median = 0;
    int32_t below = 0;
    for (; median < 255 && below + hist[median] <= m / 2; ++median) below += hist[median];
    cbounds_t lb, rb;
    lb.clear(), rb.clear();
    int32_t lt = f, i = f, gt = l;
    while (i <= gt) {
        int b = bin_index((p[i].lo[axis] + p[i].hi[axis] - base) * scale, 255);
        if (b < median) {
            lb.grow(p[i]);
            swap_prims(p[lt++], p[i++]);
        } else if (b > median) {
            rb.grow(p[i]);
            swap_prims(p[i], p[gt--]);
        } else {
            ++i;
        }
    }
    select_by_key(c, lt, gt, axis, mid - lt);
    for (int32_t k = lt; k < mid; ++k) lb.grow(p[k]);
    for (int32_t k = mid; k <= gt; ++k) rb.grow(p[k]);
    left = lb, right = rb;
    return mid - 1;
}

// ---- binned SAH ---------------------------------------------------------------------------------

struct binner_t {
    int axis;
    float base, scale;
    TW_FUNC int bin(const bvh_prim_t& p) const {
        return bin_index((p.lo[axis] + p.hi[axis] - base) * scale, SAH_BINS - 1);
    }
};

TW_FUNC float half_area(const f4_t& lo, const f4_t& hi) {
    float dx = hi[0] - lo[0], dy = hi[1] - lo[1], dz = hi[2] - lo[2];
    return dx * dy + dy * dz + dz * dx;
}

struct bin_t {
    f4_t lo, hi;
};

// The SAH's best bin boundary along the binner's axis: split after bin `best` (-1 if no split puts
// items on both sides at a finite cost). Odd and even positions fill separate bins, merged at the
// end, so a run of items landing in one bin (neighbours usually do) makes two chains, not one.
TW_FUNC int sah_best(const sah_ctx_t& c, int32_t f, int32_t l, const binner_t& bn) {
    bin_t bins[2][SAH_BINS];
    int32_t count[2][SAH_BINS];
    for (int h = 0; h < 2; ++h) {
        for (int i = 0; i < SAH_BINS; ++i) {
            bins[h][i].lo = f4_splat(SAH_HUGE), bins[h][i].hi = f4_splat(-SAH_HUGE), count[h][i] = 0;
        }
    }
    int32_t k = f;
    for (; k < l; k += 2) {
        const bvh_prim_t& p = c.prims[k];
        const bvh_prim_t& q = c.prims[k + 1];
        int bp = bn.bin(p), bq = bn.bin(q);
        ++count[0][bp], ++count[1][bq];
        bins[0][bp].lo = f4_min(prim_lo(p), bins[0][bp].lo), bins[0][bp].hi = f4_max(prim_hi(p), bins[0][bp].hi);
        bins[1][bq].lo = f4_min(prim_lo(q), bins[1][bq].lo), bins[1][bq].hi = f4_max(prim_hi(q), bins[1][bq].hi);
    }
    if (k == l) {
        const bvh_prim_t& p = c.prims[k];
        int bp = bn.bin(p);
        ++count[0][bp];
        bins[0][bp].lo = f4_min(prim_lo(p), bins[0][bp].lo), bins[0][bp].hi = f4_max(prim_hi(p), bins[0][bp].hi);
    }
    for (int i = 0; i < SAH_BINS; ++i) {
        bins[0][i].lo = f4_min(bins[1][i].lo, bins[0][i].lo), bins[0][i].hi = f4_max(bins[1][i].hi, bins[0][i].hi);
        count[0][i] += count[1][i];
    }
    // right[i]: the cost of bins i.. as one side
    float right[SAH_BINS];
    int32_t rcount[SAH_BINS];
    bin_t box = {f4_splat(SAH_HUGE), f4_splat(-SAH_HUGE)};
    int32_t total = 0;
    for (int i = SAH_BINS - 1; i > 0; --i) {
        box.lo = f4_min(bins[0][i].lo, box.lo), box.hi = f4_max(bins[0][i].hi, box.hi);
        total += count[0][i];
        rcount[i] = total, right[i] = half_area(box.lo, box.hi) * (float)total;
    }
    box.lo = f4_splat(SAH_HUGE), box.hi = f4_splat(-SAH_HUGE);
    total = 0;
    int best = -1;
    float best_cost = SAH_HUGE;
    for (int i = 0; i < SAH_BINS - 1; ++i) {
        box.lo = f4_min(bins[0][i].lo, box.lo), box.hi = f4_max(bins[0][i].hi, box.hi);
        total += count[0][i];
        if (total == 0 || rcount[i + 1] == 0) continue;
        float cost = half_area(box.lo, box.hi) * (float)total + right[i + 1];
        if (cost < best_cost) best_cost = cost, best = i;  // ties: the first (deterministic)
    }
    return best;
}

// A short run's exact SAH split: sorted along the axis, every position tried. Cheaper there than
// clearing and sweeping the bins, and better. Returns the left side's last position.
TW_FUNC int32_t sah_small(const sah_ctx_t& c, int32_t f, int32_t l, int axis) {
    select_by_key(c, f, l, axis, 0);  // sorts a short run
    float right[SAH_SMALL];
    bin_t box = {f4_splat(SAH_HUGE), f4_splat(-SAH_HUGE)};
    for (int32_t k = l; k > f; --k) {
        box.lo = f4_min(prim_lo(c.prims[k]), box.lo), box.hi = f4_max(prim_hi(c.prims[k]), box.hi);
        right[k - f] = half_area(box.lo, box.hi) * (float)(l - k + 1);
    }
    box.lo = f4_splat(SAH_HUGE), box.hi = f4_splat(-SAH_HUGE);
    int32_t best = f + (l - f + 1) / 2 - 1;  // the median if no cost is finite
    float best_cost = SAH_HUGE;
    for (int32_t k = f; k < l; ++k) {
        box.lo = f4_min(prim_lo(c.prims[k]), box.lo), box.hi = f4_max(prim_hi(c.prims[k]), box.hi);
        float cost = half_area(box.lo, box.hi) * (float)(k - f + 1) + right[k + 1 - f];
        if (cost < best_cost) best_cost = cost, best = k;
    }
    return best;
}

// Partitions the run by bin (bins <= split first), collecting each side's centre bounds; returns
// the left side's last position (f - 1 if it is empty).
TW_FUNC int32_t sah_partition(const sah_ctx_t& c, int32_t f, int32_t l, const binner_t& bn, int split,
                              cbounds_t& left, cbounds_t& right) {
    bvh_prim_t* p = c.prims;
    cbounds_t lb, rb;  // locals: kept in registers, which stores into the items would prevent
    lb.clear(), rb.clear();
    int32_t i = f, j = l;
    for (;;) {
        while (i <= j && bn.bin(p[i]) <= split) lb.grow(p[i++]);
        while (i <= j && bn.bin(p[j]) > split) rb.grow(p[j--]);
        if (i > j) break;
        lb.grow(p[j]), rb.grow(p[i]);
        swap_prims(p[i++], p[j--]);
    }
    left = lb, right = rb;
    return i - 1;
}

// ---- the tree -----------------------------------------------------------------------------------

// The position of the first group boundary nearest the run's middle (the run holds several groups,
// sorted): the left side ends before it.
TW_FUNC int32_t group_split(const sah_ctx_t& c, int32_t f, int32_t l) {
    int32_t mid = f + (l - f + 1) / 2;
    uint64_t g = group_at(c, mid);
    int32_t a = f, b = mid;  // first position of g
    while (a < b) {
        int32_t m = a + (b - a) / 2;
        if (group_at(c, m) < g) a = m + 1; else b = m;
    }
    int32_t below = a;
    a = mid + 1, b = l + 1;  // first position past g
    while (a < b) {
        int32_t m = a + (b - a) / 2;
        if (group_at(c, m) <= g) a = m + 1; else b = m;
    }
    int32_t above = a;
    bool use_below = below > f && (above > l || mid - below <= above - mid);
    return (use_below ? below : above) - 1;
}

// Where the run [f, l] splits; the children's centre bounds when the split found them.
TW_FUNC int32_t choose_split(const sah_ctx_t& c, bvh_sah_work_t& w, cbounds_t& left, cbounds_t& right,
                             bool& known) {
    known = false;
    left.clear(), right.clear();
    int32_t f = w.first, l = w.last;
    if (!one_group(c, f, l)) return group_split(c, f, l);
    if (!w.known) run_bounds(c, w);
    float extent;
    int axis = widest_axis(w, extent);
    if (!c.median && w.depth < SAH_MAX_DEPTH && l - f < SAH_SMALL) return sah_small(c, f, l, axis);
    if (!c.median && w.depth < SAH_MAX_DEPTH && extent > 0.0f) {
        binner_t bn = {axis, w.lo[axis], (float)SAH_BINS / extent};
        int best = sah_best(c, f, l, bn);
        if (best >= 0) {
            int32_t s = sah_partition(c, f, l, bn, best, left, right);
            // the partition recomputes each bin, so it agrees with the count; checked all the same
            if (s >= f && s < l) {
                known = true;
                return s;
            }
        }
    }
    known = true;
    return median_split(c, f, l, axis, w.lo[axis], extent, left, right);
}

TW_FUNC int32_t child_node(const sah_ctx_t& c, int32_t f, int32_t l, bool is_left) {
    return f == l ? c.n - 1 + f : (is_left ? l : f);
}

// Run [f, l] of node `node` becomes one leaf (see the top comment). Without ranges (a lean build)
// only the leaf's own links: the rest is for readers the lean build does not have.
TW_FUNC void make_leaf(const sah_ctx_t& c, int32_t node, int32_t f, int32_t l) {
    c.links[2 * node] = ~f, c.links[2 * node + 1] = l + 1;
    for (int32_t k = f; k <= l; ++k) c.items[k] = c.prims[k].item;
    if (!c.ranges) return;
    c.ranges[2 * node] = f, c.ranges[2 * node + 1] = l;
    for (int32_t k = f; k <= l; ++k) {
        if (node != c.n - 1 + k) c.parents[c.n - 1 + k] = node;
    }
    for (int32_t x = f + 1; x < l; ++x) c.links[2 * x] = 0, c.links[2 * x + 1] = 0, c.parents[x] = -1;
}

TW_FUNC bool is_leaf_run(const sah_ctx_t& c, int32_t f, int32_t l) {
    return f == l || (l - f + 1 <= c.leaf_size && one_group(c, f, l));
}

// Splits node w, links its children, finishes those that are leaves; the others (0 to 2) go to
// `kids` to be split in turn.
TW_FUNC int split_node(const sah_ctx_t& c, bvh_sah_work_t& w, bvh_sah_work_t* kids) {
    cbounds_t bl, br;
    bool known;
    int32_t s = choose_split(c, w, bl, br, known);
    int32_t f = w.first, l = w.last;
    int32_t left = child_node(c, f, s, true), right = child_node(c, s + 1, l, false);
    c.links[2 * w.node] = left, c.links[2 * w.node + 1] = right;
    if (c.ranges) {
        c.ranges[2 * w.node] = f, c.ranges[2 * w.node + 1] = l;
        c.parents[left] = w.node, c.parents[right] = w.node;
    }
    int nk = 0;
    for (int side = 0; side < 2; ++side) {
        int32_t cf = side ? s + 1 : f, cl = side ? l : s, node = side ? right : left;
        if (is_leaf_run(c, cf, cl)) {
            make_leaf(c, node, cf, cl);
            continue;
        }
        bvh_sah_work_t& k = kids[nk++];
        k.node = node, k.first = cf, k.last = cl, k.depth = w.depth + 1, k.known = known, k.unused = 0;
        set_bounds(k, side ? br : bl);
    }
    return nk;
}

// The whole subtree of w, by one task: the smaller child first and the larger one stacked, so the
// stack holds at most log2(N) + 1 nodes whatever the tree's depth.
TW_FUNC void build_subtree(const sah_ctx_t& c, bvh_sah_work_t w) {
    bvh_sah_work_t stack[48];
    int top = 0;
    for (;;) {
        bvh_sah_work_t kids[2];
        int nk = split_node(c, w, kids);
        if (nk == 2) {
            int big = run_size(kids[0]) >= run_size(kids[1]) ? 0 : 1;
            stack[top++] = kids[big];
            w = kids[1 - big];
        } else if (nk == 1) {
            w = kids[0];
        } else if (top > 0) {
            w = stack[--top];
        } else {
            return;
        }
    }
}

// The shared list of nodes still to split (BvhDesc.tasks): a header {lock, busy, count, 0}, then up
// to SAH_TASKS nodes. `busy` counts the nodes taken and not yet finished, whose children may still
// come: a task ends when the list is empty and nothing is busy.
struct sah_queue_t {
    int32_t lock, busy, count, unused;
    bvh_sah_work_t list[SAH_TASKS];
};

// A word other tasks change: read and written whole, outside the lock too (waiting for work).
TW_FUNC int32_t shared_load(const int32_t* p) {
#if TW_IS_CUDA
    return *(const volatile int32_t*)p;
#else
    return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}
TW_FUNC void shared_store(int32_t* p, int32_t v) {
#if TW_IS_CUDA
    *(volatile int32_t*)p = v;
#else
    __atomic_store_n(p, v, __ATOMIC_RELAXED);
#endif
}

TW_FUNC void spin_pause() {
#if !TW_IS_CUDA && defined(__SSE2__)
    __builtin_ia32_pause();
#endif
}

TW_FUNC void sah_lock(int32_t* lock) {
#if TW_IS_CUDA
    while (atomicExch(lock, 1)) {
    }
    __threadfence();
#else
    while (__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE)) {
        while (__atomic_load_n(lock, __ATOMIC_RELAXED)) spin_pause();
    }
#endif
}

TW_FUNC void sah_unlock(int32_t* lock) {
#if TW_IS_CUDA
    __threadfence();
    atomicExch(lock, 0);
#else
    __atomic_store_n(lock, 0, __ATOMIC_RELEASE);
#endif
}
}  // namespace detail

// ---- build steps ----------------------------------------------------------------------------------

// Item box k into the build's copy: item k, or (grouped: sorted by group first) the item at sorted
// position k. Returns the doubled centre, for the root's centre bounds.
TW_FUNC vec_t<3, float> bvh_sah_prim(uint64_t id, int32_t k, bool sorted) {
    const bvh_t& b = detail::bvh_at(id);
    int32_t item = sorted ? detail::bvh_i32(b.f_items)[k] : k;
    vec_t<3, float> lo, hi;
    detail::bvh_item_box(b, item, lo, hi);
    bvh_prim_t& p = reinterpret_cast<bvh_prim_t*>(b.f_prims)[k];
    for (int a = 0; a < 3; ++a) p.lo[a] = lo.c[a], p.hi[a] = hi.c[a];
    p.zero = 0.0f, p.item = item;
    return vec_t<3, float>(lo.c[0] + hi.c[0], lo.c[1] + hi.c[1], lo.c[2] + hi.c[2]);
}

// The build's start (one task): the root (centre bounds lo, hi) as the list's one node, or as the
// whole tree if it is a leaf.
TW_FUNC void bvh_build_sah(uint64_t id, const vec_t<3, float>& lo, const vec_t<3, float>& hi, bool median,
                           bool grouped) {
    const bvh_t& b = detail::bvh_at(id);
    detail::sah_ctx_t c = detail::sah_ctx(b, median, grouped);
    detail::sah_queue_t& q = *reinterpret_cast<detail::sah_queue_t*>(b.f_tasks);
    q.lock = 0, q.busy = 0, q.count = 0, q.unused = 0;
    if (c.n < 1) return;
    if (c.parents) c.parents[0] = -1;
    if (detail::is_leaf_run(c, 0, c.n - 1)) return detail::make_leaf(c, 0, 0, c.n - 1);
    bvh_sah_work_t& root = q.list[q.count++];
    root.node = 0, root.first = 0, root.last = c.n - 1, root.depth = 0, root.known = 1, root.unused = 0;
    for (int a = 0; a < 3; ++a) root.lo[a] = lo.c[a], root.hi[a] = hi.c[a];
}

// One of the build's tasks (one per thread): takes nodes from the list until none is left and none
// is busy. A node of SAH_MIN_TASK items or more is split and its children go back on the list, for
// whichever task is free; a smaller one is built whole by its task. Only the root's split has the
// machine to itself; which task builds a node does not change the tree.
TW_FUNC void bvh_build_sah_tasks(uint64_t id, bool median, bool grouped) {
    const bvh_t& b = detail::bvh_at(id);
    detail::sah_ctx_t c = detail::sah_ctx(b, median, grouped);
    detail::sah_queue_t& q = *reinterpret_cast<detail::sah_queue_t*>(b.f_tasks);
    for (;;) {
        detail::sah_lock(&q.lock);
        int32_t count = q.count;
        if (count == 0) {
            bool done = q.busy == 0;
            detail::sah_unlock(&q.lock);
            if (done) return;
            // wait without the lock, which the busy tasks need to hand out their children
            while (detail::shared_load(&q.count) == 0 && detail::shared_load(&q.busy) != 0) detail::spin_pause();
            continue;
        }
        bvh_sah_work_t w = q.list[count - 1];
        detail::shared_store(&q.count, count - 1);
        detail::shared_store(&q.busy, q.busy + 1);
        detail::sah_unlock(&q.lock);
        bvh_sah_work_t kids[2];
        int nk = 0;
        if (detail::run_size(w) < detail::SAH_MIN_TASK) {
            detail::build_subtree(c, w);
        } else {
            nk = detail::split_node(c, w, kids);
        }
        // the larger child last: the next task to ask takes it
        if (nk == 2 && detail::run_size(kids[0]) > detail::run_size(kids[1])) {
            bvh_sah_work_t t = kids[0];
            kids[0] = kids[1], kids[1] = t;
        }
        int own = 0;  // children the full list leaves to this task
        detail::sah_lock(&q.lock);
        count = q.count;
        for (int i = 0; i < nk; ++i) {
            if (count < detail::SAH_TASKS) {
                q.list[count++] = kids[i];
            } else {
                kids[own++] = kids[i];
            }
        }
        detail::shared_store(&q.count, count);
        if (own == 0) detail::shared_store(&q.busy, q.busy - 1);
        detail::sah_unlock(&q.lock);
        if (own == 0) continue;
        for (int i = 0; i < own; ++i) detail::build_subtree(c, kids[i]);
        detail::sah_lock(&q.lock);
        detail::shared_store(&q.busy, q.busy - 1);
        detail::sah_unlock(&q.lock);
    }
}

}  // namespace tw
