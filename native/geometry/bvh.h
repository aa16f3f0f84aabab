// wp.Bvh (and the tree inside wp.Mesh) in kernels: the node layout, the build steps the Python side
// launches (tilewarp/geometry/bvh.py), the refits, and the iterating queries (bvh_query_* / *_next).
//
// Build (LBVH, after Karras 2012): items sorted by the 30-bit Morton code of their box centre (ties by
// position); each internal node finds its run and split from the sorted codes alone, so every node
// is built in parallel. These build nodes (`links`: internal nodes 0..N-2 with the root at 0, the leaf
// of sorted item k at N-1+k) are re-marked as leaves where their run holds at most leaf_size items,
// which leaves the nodes below them unreachable. On the CPU, constructor "sah" and "median" write the
// same build nodes top down instead (bvh_sah.h); everything from the layout on is shared.
//
// Layout. The build nodes are then copied into the tree the queries walk (`nodes`): the reachable
// ones only, depth first, each node's two children side by side in one 64-byte line (the root is
// node 0, the pairs start at node 1 and `nodes` points 32 bytes into a 64-byte aligned buffer), so a
// 1M-triangle mesh's tree is a dense third of the build's size and a walk that tests both children
// touches one cache line. A node's descendants form one run of node indices after it (`ends`), which
// the CPU's refit sweeps backwards in parallel runs; the GPU's refit goes bottom up with counters.
// A node is 32 bytes: its box, and either two children (left, right >= 0) or, for a leaf, the run
// [~left, right) of the sorted item order `items` (left < 0).
//
// Iterating queries keep no stack: they walk the tree with parent links (state: the node, where the
// walk came from, and the open leaf's run), so a query is a small value that copies, checkpoints and
// nests freely. Two queries alive in one kernel cannot corrupt each other (NVIDIA/warp#1258) and no
// tree depth overflows anything.
#pragma once

namespace tw {

struct bvh_node_t {
    vec_t<3, float> lower;
    int32_t left;
    vec_t<3, float> upper;
    int32_t right;
};

// Members f_<field> as in the Python twin (tilewarp/builtins/bvh.py: BvhDesc). The first ones sit
// where Warp's own tests read Warp's host BVH header through ctypes (a parent array at byte 16, -1 at
// the root, and a node count at byte 48, here always 0): such a read walks valid parent
// chains and fails its assertions, instead of crashing the process and the tests after it.
struct bvh_t {
    uint64_t f_nodes;     // bvh_node_t[]: the tree the queries walk (see Layout)
    uint64_t f_ends;      // int32[]: one past each internal node's last descendant
    uint64_t f_parents;   // int32[]: each node's parent there, -1 at the root
    uint64_t f_count;     // int32[1]: how many nodes the layout placed
    uint64_t f_items;     // int32[N]: sorted position -> item index
    int32_t f_num_items;
    int32_t f_leaf_size;
    int32_t f_num_groups; // 0: the group count is on the device (f_group_count)
    int32_t f_num_nodes;  // 2N-1: room for every node (the layout places f_count[0] of them)
    uint64_t f_links;     // int32[2 (2N-1)]: the build nodes' (left, right)
    uint64_t f_build_parents;  // int32[2N-1]: their parents, -1 at the root (0: a lean build, bvh_sah.h)
    uint64_t f_ranges;    // int32[2 (2N-1)]: first and last sorted position under each build node (0: lean)
    uint64_t f_sizes;     // int32[2N-1]: internal nodes reachable under each build node (GPU layout)
    uint64_t f_remap;     // int32[2N-1]: build node -> node (0: lean, no group roots to find)
    uint64_t f_counters;  // int32[2N-1]: arrivals during bottom-up passes (zeroed before each)
    uint64_t f_keys;      // uint64[N]: the sorted Morton keys (the LBVH's input; after a CPU SAH or
                          // median build only a grouped tree's group bits hold, unwritten without)
    uint64_t f_lowers;    // vec3[N] item boxes (wp.Bvh), or 0 for a mesh's triangles:
    uint64_t f_uppers;
    uint64_t f_points;    // vec3[]: a mesh's vertices
    uint64_t f_indices;   // int32[3 * N]: a mesh's triangles
    uint64_t f_tris;      // int32[3 * N]: the same in sorted order, so a leaf's run reads them in a row
    uint64_t f_group_ids;    // int32[G]: the distinct group ids, ascending (0 without groups)
    uint64_t f_group_roots;  // int32[G]: the node holding exactly each group's items
    uint64_t f_prims;     // bvh_prim_t[N]: a CPU SAH / median build's box copy (bvh_sah.h), or 0
    uint64_t f_tasks;     // that build's shared list of nodes to split (bvh_sah.h), or 0
    int32_t f_num_points; // a mesh's vertex count (its builds clamp indices to it), else 0
    int32_t f_spare;
    uint64_t f_group_count;  // int32[1]: how many groups a grouped tree has (counted on the device, so
                             // a rebuild reads nothing back: it can be captured), or 0
};

namespace detail {
TW_FUNC const bvh_t& bvh_at(uint64_t id) { return *reinterpret_cast<const bvh_t*>(id); }
TW_FUNC bvh_node_t* bvh_nodes(const bvh_t& b) { return reinterpret_cast<bvh_node_t*>(b.f_nodes); }
TW_FUNC const int32_t* bvh_i32(uint64_t p) { return reinterpret_cast<const int32_t*>(p); }
TW_FUNC int32_t* bvh_i32w(uint64_t p) { return reinterpret_cast<int32_t*>(p); }
TW_FUNC const vec_t<3, float>* bvh_vec3(uint64_t p) { return reinterpret_cast<const vec_t<3, float>*>(p); }

TW_FUNC float fmin_(float a, float b) { return b < a ? b : a; }
TW_FUNC float fmax_(float a, float b) { return b > a ? b : a; }
TW_FUNC vec_t<3, float> vmin(const vec_t<3, float>& a, const vec_t<3, float>& b) {
    return vec_t<3, float>(fmin_(a.c[0], b.c[0]), fmin_(a.c[1], b.c[1]), fmin_(a.c[2], b.c[2]));
}
TW_FUNC vec_t<3, float> vmax(const vec_t<3, float>& a, const vec_t<3, float>& b) {
    return vec_t<3, float>(fmax_(a.c[0], b.c[0]), fmax_(a.c[1], b.c[1]), fmax_(a.c[2], b.c[2]));
}

// The box of a triangle. A mesh's build runs before its host has read back the validation of its
// indices (so the GPU is never left waiting), so an index out of range reads vertex 0 instead: the
// constructor then raises, and nothing ever reads memory outside the points.
TW_FUNC void triangle_box(const bvh_t& b, const int32_t* tri, vec_t<3, float>& lo, vec_t<3, float>& hi) {
    const vec_t<3, float>* p = bvh_vec3(b.f_points);
    const uint32_t n = (uint32_t)b.f_num_points;
    const vec_t<3, float>& a = p[(uint32_t)tri[0] < n ? tri[0] : 0];
    const vec_t<3, float>& c = p[(uint32_t)tri[1] < n ? tri[1] : 0];
    const vec_t<3, float>& d = p[(uint32_t)tri[2] < n ? tri[2] : 0];
    lo = vmin(vmin(a, c), d);
    hi = vmax(vmax(a, c), d);
}

// The box of item `item` (an index into the user's arrays).
TW_FUNC void bvh_item_box(const bvh_t& b, int32_t item, vec_t<3, float>& lo, vec_t<3, float>& hi) {
    if (b.f_lowers) {
        lo = bvh_vec3(b.f_lowers)[item], hi = bvh_vec3(b.f_uppers)[item];
    } else {
        triangle_box(b, bvh_i32(b.f_indices) + 3 * item, lo, hi);
    }
}

// The box of the item at sorted position k: a mesh reads its sorted copy of the triangles.
TW_FUNC void bvh_sorted_box(const bvh_t& b, int32_t k, vec_t<3, float>& lo, vec_t<3, float>& hi) {
    if (!b.f_tris) return bvh_item_box(b, bvh_i32(b.f_items)[k], lo, hi);
    triangle_box(b, bvh_i32(b.f_tris) + 3 * k, lo, hi);
}

TW_FUNC int clz64(uint64_t x) {
#if TW_IS_CUDA
    return __clzll((long long)x);
#else
    return x ? __builtin_clzll(x) : 64;
#endif
}

TW_FUNC int clz32(uint32_t x) {
#if TW_IS_CUDA
    return __clz((int)x);
#else
    return x ? __builtin_clz(x) : 32;
#endif
}

// Length of the common prefix of sorted keys i and j (ties broken by position), -1 outside [0, n).
TW_FUNC int bvh_delta(const uint64_t* keys, int32_t n, int32_t i, int32_t j) {
    if (j < 0 || j >= n) return -1;
    uint64_t a = keys[i], b = keys[j];
    return a != b ? clz64(a ^ b) : 64 + clz32((uint32_t)(i ^ j));
}

// 21 bits spread three apart (a 63-bit Morton code from three 21-bit coordinates).
TW_FUNC uint64_t spread21(uint64_t x) {
    x &= 0x1fffffULL;
    x = (x | x << 32) & 0x1f00000000ffffULL;
    x = (x | x << 16) & 0x1f0000ff0000ffULL;
    x = (x | x << 8) & 0x100f00f00f00f00fULL;
    x = (x | x << 4) & 0x10c30c30c30c30c3ULL;
    x = (x | x << 2) & 0x1249249249249249ULL;
    return x;
}

TW_FUNC uint64_t quantize(float x, float lo, float hi, int bits) {
    float span = hi - lo;
    float t = span > 0.0f ? (x - lo) / span : 0.0f;
    t = t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
    if (!(t == t)) t = 0.0f;  // NaN boxes sort first; they never overlap anything
    float scale = (float)((1u << bits) - 1);
    return (uint64_t)(t * scale);
}

// Plain loads on the CPU; on the GPU the refit reads boxes other blocks wrote, past the L1 cache.
// A walk that has just read two children asks for their children (or a leaf's triangles) before it
// needs them: on the CPU a walk is a chain of cache misses, and this overlaps the next one with the
// current work. The GPU hides latency with other warps instead.
TW_FUNC void prefetch_node(const bvh_t& b, const bvh_node_t& n) {
#if !TW_IS_CUDA
    if (n.left >= 0) {
        __builtin_prefetch(reinterpret_cast<const bvh_node_t*>(b.f_nodes) + n.left);
    } else if (b.f_tris) {
        __builtin_prefetch(reinterpret_cast<const int32_t*>(b.f_tris) + 3 * ~n.left);
    }
#endif
}

// Node i in two 16-byte loads on the GPU (a field-by-field copy is eight 4-byte loads, each a separate
// request when a warp's lanes read 32 different nodes: the walks were bound by those requests).
TW_FUNC bvh_node_t load_node(const bvh_node_t* nodes, int32_t i) {
#if TW_IS_CUDA
    const float4* p = reinterpret_cast<const float4*>(nodes + i);
    const float4 a = p[0], c = p[1];
    bvh_node_t n;
    n.lower = vec_t<3, float>(a.x, a.y, a.z), n.left = __float_as_int(a.w);
    n.upper = vec_t<3, float>(c.x, c.y, c.z), n.right = __float_as_int(c.w);
    return n;
#else
    return nodes[i];
#endif
}

template <typename T>
TW_FUNC T load_fresh(const T* p) {
#if TW_IS_CUDA
    return __ldcg(p);
#else
    return *p;
#endif
}

// Before arriving at a parent: this thread's box writes must be visible to the sibling's thread. On
// the GPU a fence; on the CPU the arrival's acquire-release ordering already publishes them.
TW_FUNC void fence() {
#if TW_IS_CUDA
    __threadfence();
#endif
}

TW_FUNC int32_t arrive(int32_t* counter) {
#if TW_IS_CUDA
    return atomicAdd(counter, 1);
#else
    return __atomic_fetch_add(counter, 1, __ATOMIC_ACQ_REL);
#endif
}
}  // namespace detail

// ---- build steps (one thread each; tilewarp/geometry/bvh.py launches them in order) ---------------

// Bounds of item i's box, for the scene box the Morton codes are quantised in.
TW_FUNC vec_t<3, float> bvh_item_lower(uint64_t id, int32_t i) {
    vec_t<3, float> lo, hi;
    detail::bvh_item_box(detail::bvh_at(id), i, lo, hi);
    return lo;
}
TW_FUNC vec_t<3, float> bvh_item_upper(uint64_t id, int32_t i) {
    vec_t<3, float> lo, hi;
    detail::bvh_item_box(detail::bvh_at(id), i, lo, hi);
    return hi;
}

// The sort key of item i: its box centre's 30-bit Morton code in the scene box [lo, hi] (ties go by
// position), with groups below the group id (offset to be non-negative), so each group is one run.
TW_FUNC uint64_t bvh_item_key(uint64_t id, int32_t i, const vec_t<3, float>& lo, const vec_t<3, float>& hi,
                              int32_t group, bool grouped) {
    vec_t<3, float> a, b;
    detail::bvh_item_box(detail::bvh_at(id), i, a, b);
    const int bits = 10;
    uint64_t code = 0;
    for (int k = 0; k < 3; ++k) {
        float c = 0.5f * (a.c[k] + b.c[k]);
        code |= detail::spread21(detail::quantize(c, lo.c[k], hi.c[k], bits)) << (2 - k);
    }
    if (grouped) code |= (uint64_t)((int64_t)group + 2147483648LL) << 30;
    return code;
}

// Internal build node i (0 <= i < N-1): its run of sorted items, its split, its children's parent links.
TW_FUNC void bvh_build_internal(uint64_t id, int32_t i) {
    const bvh_t& b = detail::bvh_at(id);
    const uint64_t* keys = reinterpret_cast<const uint64_t*>(b.f_keys);
    int32_t n = b.f_num_items;
    int d = detail::bvh_delta(keys, n, i, i + 1) > detail::bvh_delta(keys, n, i, i - 1) ? 1 : -1;
    int dmin = detail::bvh_delta(keys, n, i, i - d);
    int32_t lmax = 2;
    while (detail::bvh_delta(keys, n, i, i + lmax * d) > dmin) lmax *= 2;
    int32_t l = 0;
    for (int32_t t = lmax / 2; t >= 1; t /= 2) {
        if (detail::bvh_delta(keys, n, i, i + (l + t) * d) > dmin) l += t;
    }
    int32_t j = i + l * d;
    int dnode = detail::bvh_delta(keys, n, i, j);
    int32_t s = 0;
    for (int32_t div = 2;; div *= 2) {
        int32_t t = (l + div - 1) / div;
        if (detail::bvh_delta(keys, n, i, i + (s + t) * d) > dnode) s += t;
        if (t <= 1) break;
    }
    int32_t gamma = i + s * d + (d < 0 ? -1 : 0);
    int32_t first = i < j ? i : j, last = i < j ? j : i;
    int32_t left = first == gamma ? n - 1 + gamma : gamma;
    int32_t right = last == gamma + 1 ? n - 1 + gamma + 1 : gamma + 1;
    int32_t* links = detail::bvh_i32w(b.f_links);
    links[2 * i] = left, links[2 * i + 1] = right;
    int32_t* parents = detail::bvh_i32w(b.f_build_parents);
    parents[left] = i, parents[right] = i;
    int32_t* ranges = detail::bvh_i32w(b.f_ranges);
    ranges[2 * i] = first, ranges[2 * i + 1] = last;
}

// Build leaf k (sorted position k, build node N-1+k); the root's parent link with N = 1. A mesh's
// sorted copy of its triangle k too.
TW_FUNC void bvh_build_leaf(uint64_t id, int32_t k) {
    const bvh_t& b = detail::bvh_at(id);
    if (b.f_ranges) {  // a lean build has none: its top-down build wrote the leaf rows the layout reads
        int32_t node = b.f_num_items - 1 + k;
        int32_t* links = detail::bvh_i32w(b.f_links);
        links[2 * node] = ~k, links[2 * node + 1] = k + 1;
        int32_t* ranges = detail::bvh_i32w(b.f_ranges);
        ranges[2 * node] = k, ranges[2 * node + 1] = k;
        if (b.f_num_items == 1) detail::bvh_i32w(b.f_build_parents)[0] = -1;
    }
    if (b.f_tris) {
#if !TW_IS_CUDA
        // a gather from the user's triangles in tree order, a cache miss each: ask for the one a few
        // tasks ahead now (a CPU task runs the next k next; the GPU hides the misses with other warps)
        if (k + 16 < b.f_num_items)
            __builtin_prefetch(detail::bvh_i32(b.f_indices) + 3 * detail::bvh_i32(b.f_items)[k + 16]);
#endif
        const int32_t* from = detail::bvh_i32(b.f_indices) + 3 * detail::bvh_i32(b.f_items)[k];
        int32_t* to = detail::bvh_i32w(b.f_tris) + 3 * k;
        to[0] = from[0], to[1] = from[1], to[2] = from[2];
    }
}

// An internal build node over at most leaf_size items becomes a leaf over its whole run, unless
// (grouped) its items belong to different groups: each group keeps a subtree of its own.
TW_FUNC void bvh_collapse(uint64_t id, int32_t i, bool grouped) {
    const bvh_t& b = detail::bvh_at(id);
    const int32_t* r = detail::bvh_i32(b.f_ranges) + 2 * i;
    const uint64_t* keys = reinterpret_cast<const uint64_t*>(b.f_keys);
    bool one_group = !grouped || (keys[r[0]] >> 30) == (keys[r[1]] >> 30);
    if (r[1] - r[0] + 1 <= b.f_leaf_size && one_group) {
        int32_t* links = detail::bvh_i32w(b.f_links);
        links[2 * i] = ~r[0], links[2 * i + 1] = r[1] + 1;
    }
}

namespace detail {
// A build node is a leaf below which nothing is reachable, and reachable when no ancestor is a leaf.
TW_FUNC bool build_leaf(const int32_t* links, int32_t x) { return links[2 * x] < 0; }

// Node f of the layout from build node x: its parent node, and where its children pair starts.
TW_FUNC void place(const bvh_t& b, int32_t x, int32_t f, int32_t parent, int32_t pair, int32_t end) {
    const int32_t* links = bvh_i32(b.f_links);
    bvh_node_t& node = bvh_nodes(b)[f];
    if (build_leaf(links, x)) {
        node.left = links[2 * x], node.right = links[2 * x + 1];
    } else {
        node.left = pair, node.right = pair + 1;
    }
    bvh_i32w(b.f_parents)[f] = parent;
    bvh_i32w(b.f_ends)[f] = end;
    if (b.f_remap) bvh_i32w(b.f_remap)[x] = f;  // only group roots read it
}
}  // namespace detail

// The layout in one pass (the CPU: one task, a depth-first walk that hands out children pairs in
// the order it meets them).
TW_FUNC void bvh_layout_serial(uint64_t id) {
    const bvh_t& b = detail::bvh_at(id);
    const int32_t* links = detail::bvh_i32(b.f_links);
    int32_t* ends = detail::bvh_i32w(b.f_ends);
    // entries (build node, node, parent node), or (-1, node) to close a node: its descendants end here.
    // Each level of the walk leaves two entries, and an LBVH is at most 96 levels deep (62-bit keys,
    // then 32-bit positions), a top-down tree about 64 + log2(N) (bvh_sah.h), so 512 never fill.
    int32_t stack[3 * 512];
    int top = 0, next = 1;
    stack[0] = 0, stack[1] = 0, stack[2] = -1, top = 1;
    while (top > 0) {
        --top;
        int32_t x = stack[3 * top], f = stack[3 * top + 1], parent = stack[3 * top + 2];
        if (x < 0) {
            ends[f] = next;
            continue;
        }
        int32_t pair = next;
        detail::place(b, x, f, parent, pair, pair);
        if (detail::build_leaf(links, x)) continue;
        next += 2;
        int32_t* e = stack + 3 * top;
        e[0] = -1, e[1] = f, e[2] = 0;
        e[3] = links[2 * x + 1], e[4] = pair + 1, e[5] = f;
        e[6] = links[2 * x], e[7] = pair, e[8] = f;
        top += 3;
    }
    detail::bvh_i32w(b.f_count)[0] = next;
}

// The layout in parallel (the GPU), first: how many internal nodes are reachable under each build
// node, bottom up from every reachable build leaf x (counters zeroed before). (Finding each build
// node's box on the same walk, to skip the refit, measured 3x slower than both: build nodes are
// scattered in memory, the layout's refit walks neighbours.)
TW_FUNC void bvh_layout_count(uint64_t id, int32_t x) {
    const bvh_t& b = detail::bvh_at(id);
    const int32_t* links = detail::bvh_i32(b.f_links);
    const int32_t* parents = detail::bvh_i32(b.f_build_parents);
    if (x >= b.f_num_nodes || !detail::build_leaf(links, x)) return;
    int32_t p = parents[x];
    if (p >= 0 && detail::build_leaf(links, p)) return;  // below a collapsed leaf
    int32_t* sizes = detail::bvh_i32w(b.f_sizes);
    int32_t* counters = detail::bvh_i32w(b.f_counters);
    sizes[x] = 0;
    while (p >= 0) {
        detail::fence();
        if (detail::arrive(counters + p) == 0) return;
        sizes[p] = 1 + detail::load_fresh(sizes + links[2 * p]) + detail::load_fresh(sizes + links[2 * p + 1]);
        p = parents[p];
    }
    detail::bvh_i32w(b.f_count)[0] = 1 + 2 * sizes[0];
}

// ... then each reachable build node x finds its place from its path to the root: a left child's
// pair follows its parent's pair, a right child's comes after the left sibling's descendants.
TW_FUNC void bvh_layout_place(uint64_t id, int32_t x) {
    const bvh_t& b = detail::bvh_at(id);
    const int32_t* links = detail::bvh_i32(b.f_links);
    const int32_t* parents = detail::bvh_i32(b.f_build_parents);
    const int32_t* sizes = detail::bvh_i32(b.f_sizes);
    if (x >= b.f_num_nodes) return;
    int32_t steps[2] = {0, 0}, right[2] = {0, 0};
    int32_t sum = 0, depth = 0;
    for (int32_t c = x; c != 0; ++depth) {
        int32_t p = parents[c];
        if (p < 0 || detail::build_leaf(links, p)) return;  // unreachable (or not a node of this tree)
        bool is_right = links[2 * p + 1] == c;
        int32_t step = 2 + (is_right ? 2 * sizes[links[2 * p]] : 0);
        if (depth < 2) steps[depth] = step, right[depth] = is_right;
        sum += step;
        c = p;
    }
    int32_t pair = 1 + sum, f = 0, parent = -1;
    if (depth >= 1) {
        int32_t parent_pair = pair - steps[0];
        f = parent_pair + right[0];
        parent = depth >= 2 ? parent_pair - steps[1] + right[1] : 0;
    }
    bool leaf = detail::build_leaf(links, x);
    detail::place(b, x, f, parent, pair, leaf ? pair : pair + 2 * sizes[x]);
}

namespace detail {
// Node i's box from its items (a leaf) or its children's boxes.
TW_FUNC void refit_node(const bvh_t& b, bvh_node_t* nodes, int32_t i) {
    bvh_node_t& node = nodes[i];
    vec_t<3, float> lo, hi;
    if (node.left < 0) {
        lo = vec_t<3, float>(3.402823466e+38f), hi = vec_t<3, float>(-3.402823466e+38f);
        for (int32_t k = ~node.left; k < node.right; ++k) {
            vec_t<3, float> a, c;
            bvh_sorted_box(b, k, a, c);
            lo = vmin(lo, a), hi = vmax(hi, c);
        }
    } else {
        const bvh_node_t& l = nodes[node.left];
        const bvh_node_t& r = nodes[node.right];
        lo = vmin(l.lower, r.lower), hi = vmax(l.upper, r.upper);
    }
    node.lower = lo, node.upper = hi;
}
}  // namespace detail

// The CPU's refit: nodes [begin, end) backwards (children come after their parents), one task per
// run of whole subtrees, then the nodes above them.
TW_FUNC void bvh_refit_sweep(uint64_t id, int32_t begin, int32_t end) {
    const bvh_t& b = detail::bvh_at(id);
    bvh_node_t* nodes = detail::bvh_nodes(b);
    for (int32_t i = end - 1; i >= begin; --i) detail::refit_node(b, nodes, i);
}

// The GPU's refit from node `node` if it is a leaf: its box from its items, then up the tree, each
// parent finished by the second of its two children to arrive (counters zeroed before the launch).
TW_FUNC void bvh_refit(uint64_t id, int32_t node) {
    const bvh_t& b = detail::bvh_at(id);
    bvh_node_t* nodes = detail::bvh_nodes(b);
    if (node >= detail::bvh_i32(b.f_count)[0] || nodes[node].left >= 0) return;
    const int32_t* parents = detail::bvh_i32(b.f_parents);
    detail::refit_node(b, nodes, node);
    int32_t* counters = detail::bvh_i32w(b.f_counters);
    for (int32_t parent = parents[node]; parent >= 0; parent = parents[parent]) {
        detail::fence();
        if (detail::arrive(counters + parent) == 0) return;  // the sibling finishes the parent
        bvh_node_t& p = nodes[parent];
        vec_t<3, float> lo, hi;
        const float* l = reinterpret_cast<const float*>(nodes + p.left);
        const float* r = reinterpret_cast<const float*>(nodes + p.right);
        for (int k = 0; k < 3; ++k) {  // lower at floats 0..2, upper at 4..6
            lo.c[k] = detail::fmin_(detail::load_fresh(l + k), detail::load_fresh(r + k));
            hi.c[k] = detail::fmax_(detail::load_fresh(l + 4 + k), detail::load_fresh(r + 4 + k));
        }
        p.lower = lo, p.upper = hi;
    }
}

// Group g's root (groups sorted), found in the build nodes: walk up from its first item's leaf until
// the node's run covers the group's last item, then its node in the layout. first/last: the group's
// run of sorted positions. After the layout.
TW_FUNC void bvh_group_root(uint64_t id, int32_t g, int32_t first, int32_t last) {
    const bvh_t& b = detail::bvh_at(id);
    const int32_t* parents = detail::bvh_i32(b.f_build_parents);
    const int32_t* ranges = detail::bvh_i32(b.f_ranges);
    const int32_t* links = detail::bvh_i32(b.f_links);
    int32_t node = b.f_num_items - 1 + first;
    while (ranges[2 * node + 1] < last || ranges[2 * node] > first) node = parents[node];
    // the deepest reachable node: a collapsed leaf above `node` holds the group too
    for (int32_t p = parents[node]; p >= 0; p = parents[p]) {
        if (detail::build_leaf(links, p)) node = p;
    }
    detail::bvh_i32w(b.f_group_roots)[g] = detail::bvh_i32(b.f_remap)[node];
}

// ---- queries ----------------------------------------------------------------------------------------

// Warp's bvh_get_group_root: the node holding exactly group `group`'s items, -1 if no item has it.
TW_FUNC int32_t bvh_get_group_root(uint64_t id, int32_t group) {
    const bvh_t& b = detail::bvh_at(id);
    if (!b.f_group_count) return -1;  // no groups
    const int32_t* ids = detail::bvh_i32(b.f_group_ids);
    const int32_t count = *detail::bvh_i32(b.f_group_count);
    int32_t lo = 0, hi = count;
    while (lo < hi) {
        int32_t m = lo + (hi - lo) / 2;
        if (ids[m] < group) lo = m + 1; else hi = m;
    }
    return lo < count && ids[lo] == group ? detail::bvh_i32(b.f_group_roots)[lo] : -1;
}

enum { BVH_AABB = 0, BVH_RAY = 1, BVH_SPHERE = 2, BVH_CAPSULE = 3 };

// Members f_<field> as in the Python twin (tilewarp/builtins/bvh.py: BvhQuery).
struct bvh_query_t {
    uint64_t f_bvh;
    vec_t<3, float> f_a;    // box lower / ray or capsule start / sphere centre
    vec_t<3, float> f_b;    // box upper / ray or capsule direction
    vec_t<3, float> f_inv;  // 1 / direction
    float f_radius;
    int32_t f_kind;
    int32_t f_root;
    int32_t f_node;         // the node the walk stands on, -1 when done
    int32_t f_down;         // 1: arrived from above; 0: arrived from the child f_prev
    int32_t f_prev;
    int32_t f_cursor, f_end;  // the open leaf's remaining sorted positions
};

namespace detail {
TW_FUNC bool box_overlap(const vec_t<3, float>& lo, const vec_t<3, float>& hi, const vec_t<3, float>& a,
                         const vec_t<3, float>& b) {
    return !(a.c[0] > hi.c[0] || b.c[0] < lo.c[0] || a.c[1] > hi.c[1] || b.c[1] < lo.c[1] ||
             a.c[2] > hi.c[2] || b.c[2] < lo.c[2]);
}

// Entry distance of the ray into [lo, hi] within [0, max_t], or -1 on a miss; `inv` from
// reciprocal(). Branch-free: a direction component of zero has inv = +inf, so a slab the ray lies in
// gives (lo - o) * inv and (hi - o) * inv of -inf / +inf, or NaN (0 * inf) where the origin is on a
// face; the operand order below makes fmin_ / fmax_ drop such a NaN, so the slab then constrains
// nothing, as it should (the ray stays inside it), and a ray outside the slab gets an empty range.
TW_FUNC float ray_box(const vec_t<3, float>& o, const vec_t<3, float>& inv, const vec_t<3, float>& lo,
                      const vec_t<3, float>& hi, float max_t) {
    float t0 = 0.0f, t1 = max_t;
    for (int k = 0; k < 3; ++k) {
        float a = (lo.c[k] - o.c[k]) * inv.c[k], b = (hi.c[k] - o.c[k]) * inv.c[k];
        // fmin_(x, y) keeps x when y is NaN, and a NaN x lands in t0 / t1's second operand, dropped
        t0 = fmax_(t0, fmin_(a, b)), t1 = fmin_(t1, fmax_(b, a));
    }
    return t0 <= t1 ? t0 : -1.0f;
}

TW_FUNC float box_dist_sq(const vec_t<3, float>& p, const vec_t<3, float>& lo, const vec_t<3, float>& hi) {
    float s = 0.0f;
    for (int k = 0; k < 3; ++k) {
        float d = fmax_(fmax_(lo.c[k] - p.c[k], 0.0f), p.c[k] - hi.c[k]);
        s += d * d;
    }
    return s;
}

// A capsule (segment a + t * dir, t in [0, max_t], inflated by r) against a box: the box grown by r
// against the segment, a conservative test (it may report a box the capsule only nearly touches
// at a corner, as a broad phase may).
TW_FUNC bool capsule_box(const bvh_query_t& q, const vec_t<3, float>& lo, const vec_t<3, float>& hi, float max_t) {
    vec_t<3, float> a, b;
    for (int k = 0; k < 3; ++k) a.c[k] = lo.c[k] - q.f_radius, b.c[k] = hi.c[k] + q.f_radius;
    return ray_box(q.f_a, q.f_inv, a, b, max_t) >= 0.0f;
}

TW_FUNC bool query_hits(const bvh_query_t& q, const vec_t<3, float>& lo, const vec_t<3, float>& hi, float max_t) {
    switch (q.f_kind) {
    case BVH_AABB: return box_overlap(lo, hi, q.f_a, q.f_b);
    case BVH_RAY: return ray_box(q.f_a, q.f_inv, lo, hi, max_t) >= 0.0f;
    case BVH_SPHERE: return box_dist_sq(q.f_a, lo, hi) <= q.f_radius * q.f_radius;
    default: return capsule_box(q, lo, hi, max_t);
    }
}

// 1 / d for ray_box, with +inf for a zero component of either sign (ray_box's NaN handling
// assumes a positive infinity there).
TW_FUNC vec_t<3, float> reciprocal(const vec_t<3, float>& d) {
    vec_t<3, float> inv;
    const float inf = detail::bits_f32(0x7f800000u);
    for (int k = 0; k < 3; ++k) inv.c[k] = d.c[k] != 0.0f ? 1.0f / d.c[k] : inf;
    return inv;
}

TW_FUNC bvh_query_t bvh_query(uint64_t id, int kind, const vec_t<3, float>& a, const vec_t<3, float>& b,
                              float radius, int32_t root) {
    bvh_query_t q = {};
    q.f_bvh = id, q.f_kind = kind, q.f_a = a, q.f_b = b, q.f_radius = radius;
    q.f_inv = reciprocal(b);
    const bvh_t& t = bvh_at(id);
    q.f_root = root < 0 ? 0 : root;  // -1: the whole tree
    q.f_node = t.f_num_items > 0 && q.f_root < t.f_num_nodes ? q.f_root : -1;
    q.f_down = 1, q.f_prev = -1;
    return q;
}

// Walk on to the next leaf whose box the query hits, opening its run; false when the walk is over.
TW_FUNC bool bvh_next_leaf(bvh_query_t& q, float max_t) {
    const bvh_t& t = bvh_at(q.f_bvh);
    const bvh_node_t* nodes = bvh_nodes(t);
    const int32_t* parents = bvh_i32(t.f_parents);
    while (q.f_node >= 0) {
        const bvh_node_t& node = nodes[q.f_node];
        bool up = false, opened = false;
        if (q.f_down) {
            if (!query_hits(q, node.lower, node.upper, max_t)) {
                up = true;
            } else if (node.left < 0) {
                q.f_cursor = ~node.left, q.f_end = node.right;
                up = opened = true;
            } else {
                q.f_node = node.left;
            }
        } else if (q.f_prev == node.left) {
            q.f_node = node.right, q.f_down = 1;
        } else {
            up = true;
        }
        if (up) {
            if (q.f_node == q.f_root) {
                q.f_node = -1;
            } else {
                q.f_prev = q.f_node, q.f_node = parents[q.f_node], q.f_down = 0;
            }
        }
        if (opened) return true;
    }
    return false;
}
}  // namespace detail

TW_FUNC bvh_query_t bvh_query_aabb(uint64_t id, const vec_t<3, float>& low, const vec_t<3, float>& high,
                                   int32_t root) {
    return detail::bvh_query(id, BVH_AABB, low, high, 0.0f, root);
}
TW_FUNC bvh_query_t bvh_query_ray(uint64_t id, const vec_t<3, float>& start, const vec_t<3, float>& dir,
                                  int32_t root) {
    return detail::bvh_query(id, BVH_RAY, start, dir, 0.0f, root);
}
TW_FUNC bvh_query_t bvh_query_sphere(uint64_t id, const vec_t<3, float>& center, float radius, int32_t root) {
    return detail::bvh_query(id, BVH_SPHERE, center, vec_t<3, float>(), radius, root);
}
TW_FUNC bvh_query_t bvh_query_capsule(uint64_t id, const vec_t<3, float>& start, const vec_t<3, float>& dir,
                                      float radius, int32_t root) {
    return detail::bvh_query(id, BVH_CAPSULE, start, dir, radius, root);
}

namespace detail {
// The walk's next item passing `hits(item)`: (found, the advanced query, the item or `index`).
template <typename Hits>
TW_FUNC tuple_t<bool, bvh_query_t, int32_t> bvh_next_item(bvh_query_t q, int32_t index, float max_dist, Hits hits) {
    const int32_t* items = bvh_i32(bvh_at(q.f_bvh).f_items);
    for (;;) {
        while (q.f_cursor < q.f_end) {
            int32_t item = items[q.f_cursor++];
            if (hits(q, item)) return make_tuple<bool, bvh_query_t, int32_t>(true, q, item);
        }
        if (!bvh_next_leaf(q, max_dist)) return make_tuple<bool, bvh_query_t, int32_t>(false, q, index);
    }
}

struct item_box_hits {
    float max_dist;
    TW_FUNC bool operator()(const bvh_query_t& q, int32_t item) const {
        vec_t<3, float> lo, hi;
        bvh_item_box(bvh_at(q.f_bvh), item, lo, hi);
        return query_hits(q, lo, hi, max_dist);
    }
};
}  // namespace detail

// (found, the advanced query, the next item whose own box the query hits, or `index` unchanged)
TW_FUNC tuple_t<bool, bvh_query_t, int32_t> bvh_query_next(bvh_query_t q, int32_t index, float max_dist) {
    return detail::bvh_next_item(q, index, max_dist, detail::item_box_hits{max_dist});
}
TW_FUNC tuple_t<bool, bvh_query_t, int32_t> bvh_query_next(bvh_query_t q, int32_t index) {  // `for i in query`
    return bvh_query_next(q, index, 3.402823466e+38f);
}

}  // namespace tw
