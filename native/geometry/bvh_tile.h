// Block-cooperative BVH and mesh queries: Warp's tile_bvh_query_aabb / _ray, tile_mesh_query_aabb,
// tile_bvh_query_next / tile_mesh_query_aabb_next (a tile of one hit per lane) and tile_query_valid.
//
// The query is a shared tile of int32 words (tilewarp/builtins/bvh_tile.py sizes it: HEAD words, then
// LANE words per lane), so the block's storage plan places it like any other shared tile. It holds the
// query's parameters and, per lane, a stackless walk of bvh.h over a subtree of its own: lane l walks
// its subtrees and hands out one hit per `next`. The lanes' subtrees always partition what is left of
// the tree, so every hit is reported exactly once, and nothing is buffered: no overflow can drop or
// repeat a hit (NVIDIA/warp#1747), and any block size works (#1746).
//
// Start: the block expands the tree breadth first, each lane testing one frontier node's children,
// until there are at least as many hit subtrees as active lanes (or only leaves are left); lane l then
// takes subtrees l and l + active. Next: where some lanes ran out of work while others have some left,
// each busy lane offers a part of its walk (its second subtree, or the right child of the highest
// ancestor of its position whose right side it has not reached), and lane 0 pairs offers with idle
// lanes in lane order. Every step is deterministic, so the CPU and CUDA hand out the same batches.
// Lanes that returned (the kernel's tw_done flags) are handed nothing: the walks they hold move, whole,
// to idle lanes. Barriers separate every phase; the flags several lanes raise are only ever set to 1.
#pragma once
#include "bvh.h"

namespace tw {
namespace detail {

struct bvh_tile_head_t {
    bvh_query_t base;  // the query (bvh id, kind, box or ray); each lane's walk copies it
    int32_t count;     // the frontier's size while the start expands it
    int32_t flip;      // which scratch buffer holds the frontier
    int32_t stop;      // the frontier holds only leaves
    int32_t valid;     // the last batch held a hit (set before the first)
    int32_t idle;      // some active lane has no work
    int32_t busy;      // some lane may have work left
    int32_t orphan;    // some lane that returned still holds work
    int32_t live;      // some active lane has not returned
};

// Words of the shared tile: the head, then one record per lane (keep in step with bvh_tile.py).
constexpr int BVH_TILE_HEAD = 32;
constexpr int BVH_TILE_LANE = 8;
static_assert(sizeof(bvh_tile_head_t) <= 4 * BVH_TILE_HEAD, "the head outgrew its words");

// A lane's record: the walk over its subtree (bvh_query_t's walk state, f_down stored as prev < 0;
// root -1: no work, -2: the lane returned), a second subtree to walk afterwards, and what it offers
// while rebalancing (TQ_ORPHAN: the whole walk, its lane having returned).
enum { TQ_ROOT, TQ_NODE, TQ_PREV, TQ_CURSOR, TQ_END, TQ_PENDING, TQ_OFFER, TQ_REROOT };
enum { TQ_GIVES_PENDING = -2, TQ_SPLITS_NODE = -3, TQ_ORPHAN = -4, TQ_RETIRED = -2 };

template <int BD, typename Q> TW_FUNC bvh_tile_head_t& tq_head(const Q& q) {
    static_assert(Q::size >= BVH_TILE_HEAD + BVH_TILE_LANE * BD, "the query tile is too small");
    return *reinterpret_cast<bvh_tile_head_t*>(q.data);
}
template <typename Q> TW_FUNC int32_t* tq_lane(const Q& q, int lane) {
    return q.data + BVH_TILE_HEAD + BVH_TILE_LANE * lane;
}

TW_FUNC bool tq_hits(const bvh_query_t& base, int32_t node) {
    const bvh_node_t& n = bvh_nodes(bvh_at(base.f_bvh))[node];
    return query_hits(base, n.lower, n.upper, 3.402823466e+38f);
}

// A fresh walk over subtree `root` (-1: none).
TW_FUNC void tq_begin(int32_t* r, int32_t root, int32_t pending) {
    r[TQ_ROOT] = root, r[TQ_NODE] = root, r[TQ_PREV] = -1, r[TQ_CURSOR] = 0, r[TQ_END] = 0;
    r[TQ_PENDING] = pending, r[TQ_OFFER] = -1;
}

// The lane's next hit (its walks advanced), or -1 when its work is done.
TW_FUNC int32_t tq_next_hit(const bvh_query_t& base, int32_t* r) {
    if (r[TQ_ROOT] < 0) return -1;
    bvh_query_t w = base;
    w.f_root = r[TQ_ROOT], w.f_node = r[TQ_NODE], w.f_prev = r[TQ_PREV], w.f_down = r[TQ_PREV] < 0;
    w.f_cursor = r[TQ_CURSOR], w.f_end = r[TQ_END];
    int32_t pending = r[TQ_PENDING], hit = -1;
    for (;;) {
        tuple_t<bool, bvh_query_t, int32_t> next =
            bvh_next_item(w, -1, 3.402823466e+38f, item_box_hits{3.402823466e+38f});
        w = get<1>(next);
        if (get<0>(next)) {
            hit = get<2>(next);
            break;
        }
        if (pending < 0) {
            w.f_root = -1;
            break;
        }
        w.f_root = w.f_node = pending, w.f_down = 1, w.f_prev = -1, w.f_cursor = w.f_end = 0;
        pending = -1;
    }
    r[TQ_ROOT] = w.f_root, r[TQ_NODE] = w.f_node, r[TQ_PREV] = w.f_down ? -1 : w.f_prev;
    r[TQ_CURSOR] = w.f_cursor, r[TQ_END] = w.f_end, r[TQ_PENDING] = pending;
    return hit;
}

// What a busy lane can give away, in r[TQ_OFFER] (-1: nothing), and how its walk shrinks if taken
// (r[TQ_REROOT]): its second subtree; else the right child of the highest ancestor A of its position
// reached through A's left child (A's right side is all that is left above it: the lane keeps A.left);
// else, standing on an internal node it has not entered with nothing left above, that node's right
// child (the lane goes on from the left one).
TW_FUNC void tq_offer(const bvh_query_t& base, int32_t* r) {
    if (r[TQ_OFFER] == TQ_ORPHAN) return;
    r[TQ_OFFER] = -1;
    if (r[TQ_ROOT] < 0) return;
    if (r[TQ_PENDING] >= 0) {
        r[TQ_OFFER] = r[TQ_PENDING], r[TQ_REROOT] = TQ_GIVES_PENDING;
        return;
    }
    const int32_t node = r[TQ_NODE];
    if (node < 0) return;  // only the open leaf's items are left
    const bvh_t& t = bvh_at(base.f_bvh);
    const bvh_node_t* nodes = bvh_nodes(t);
    const int32_t* parents = bvh_i32(t.f_parents);
    int32_t child = r[TQ_PREV] < 0 ? node : r[TQ_PREV], best = -1;
    while (child != r[TQ_ROOT]) {
        const int32_t a = parents[child];
        if (nodes[a].left == child) best = a;
        child = a;
    }
    if (best >= 0) {
        r[TQ_OFFER] = nodes[best].right, r[TQ_REROOT] = nodes[best].left;
    } else if (r[TQ_PREV] < 0 && nodes[node].left >= 0) {
        r[TQ_OFFER] = nodes[node].right, r[TQ_REROOT] = TQ_SPLITS_NODE;
    }
}

// The donor gives its offer away.
TW_FUNC void tq_give(const bvh_query_t& base, int32_t* r) {
    if (r[TQ_REROOT] == TQ_GIVES_PENDING) {
        r[TQ_PENDING] = -1;
    } else if (r[TQ_REROOT] == TQ_SPLITS_NODE) {
        const int32_t left = bvh_nodes(bvh_at(base.f_bvh))[r[TQ_NODE]].left;
        r[TQ_ROOT] = left, r[TQ_NODE] = left, r[TQ_PREV] = -1;
    } else {
        // standing on A itself, back from A.left: A.left is done but for the open leaf's items
        if (r[TQ_PREV] >= 0 && r[TQ_PREV] == r[TQ_REROOT]) r[TQ_NODE] = -1;
        r[TQ_ROOT] = r[TQ_REROOT];
    }
    r[TQ_OFFER] = -1;
}

// Lane 0 pairs the offers with the idle lanes, both in lane order: first the walks of lanes that
// returned (moved whole), then the parts the busy lanes offer.
template <typename Q> TW_FUNC void tq_pair(const Q& q, const bvh_query_t& base, int active) {
    int idle = 0;
    for (int pass = 0; pass < 2; ++pass) {
        for (int d = 0; d < active; ++d) {
            int32_t* r = tq_lane(q, d);
            if (pass == 0 ? r[TQ_OFFER] != TQ_ORPHAN : r[TQ_OFFER] < 0) continue;
            while (idle < active && tq_lane(q, idle)[TQ_ROOT] != -1) ++idle;
            if (idle >= active) return;
            int32_t* to = tq_lane(q, idle++);
            if (pass == 0) {
                for (int k = TQ_ROOT; k <= TQ_PENDING; ++k) to[k] = r[k];
                to[TQ_OFFER] = -1, r[TQ_ROOT] = TQ_RETIRED, r[TQ_OFFER] = -1;
            } else {
                tq_begin(to, r[TQ_OFFER], -1);
                tq_give(base, r);
            }
        }
    }
}

// One breadth-first step of the start: each frontier node is kept (a leaf), or replaced by its
// children that the query hits; lane 0 numbers the survivors (scan) so the order stays the tree's.
template <int BD, typename Q> TW_FUNC bool tq_expand(const Q& q, const bvh_query_t& base, int n) {
    constexpr int P = Q::threads;
    bvh_tile_head_t& h = tq_head<BD>(q);
    int32_t* a = tq_lane(q, 0);
    int32_t* cur = h.flip ? a + 2 * BD : a;
    int32_t* nxt = h.flip ? a : a + 2 * BD;
    int32_t* marks = a + 4 * BD;
    const bvh_node_t* nodes = bvh_nodes(bvh_at(base.f_bvh));
    for (int l = lane_index(); l < n; l += P) {
        const bvh_node_t& node = nodes[cur[l]];
        marks[l] = node.left < 0 ? 4 : (tq_hits(base, node.left) ? 1 : 0) | (tq_hits(base, node.right) ? 2 : 0);
    }
    block_sync();
    if (lane_index() == 0) {
        int total = 0, inner = 0;
        for (int l = 0; l < n; ++l) {
            const int m = marks[l];
            inner |= m != 4;
            marks[l] = total * 8 + m;
            total += m == 4 ? 1 : (m & 1) + (m >> 1);
        }
        h.stop = !inner;
        h.count = inner ? total : n;
    }
    block_sync();
    if (h.stop) return false;
    for (int l = lane_index(); l < n; l += P) {
        const int m = marks[l] & 7;
        int at = marks[l] >> 3;
        const bvh_node_t& node = nodes[cur[l]];
        if (m == 4) nxt[at] = cur[l];
        if (m & 1) nxt[at++] = node.left;
        if (m & 2) nxt[at] = node.right;
    }
    block_sync();
    if (lane_index() == 0) h.flip ^= 1;
    block_sync();
    return true;
}
}  // namespace detail

// The query's start: kind BVH_AABB (a = lower, b = upper) or BVH_RAY (a = start, b = direction);
// `active`: the block's lanes inside the launch, the only ones handed hits.
template <int BD, typename Q>
TW_FUNC void tile_bvh_query_start(Q& q, uint64_t id, int kind, const vec_t<3, float>& a, const vec_t<3, float>& b,
                                  int active) {
    constexpr int P = Q::threads, C = (BD + P - 1) / P;
    detail::bvh_tile_head_t& h = detail::tq_head<BD>(q);
    const int target = active < 1 ? 1 : (active > BD ? BD : active);
    block_sync();  // an earlier user of these bytes is done
    if (lane_index() == 0) {
        h.base = detail::bvh_query(id, kind, a, b, 0.0f, -1);
        int32_t* frontier = detail::tq_lane(q, 0);
        h.count = h.base.f_node >= 0 && detail::tq_hits(h.base, h.base.f_node) ? 1 : 0;
        frontier[0] = h.base.f_node;
        h.flip = 0, h.valid = 1, h.orphan = 0, h.live = 0;
    }
    block_sync();
    const bvh_query_t base = h.base;
    for (;;) {
        const int n = h.count;
        if (n == 0 || n >= target || !detail::tq_expand<BD>(q, base, n)) break;
    }
    const int n = h.count;
    const int32_t* frontier = detail::tq_lane(q, 0) + (h.flip ? 2 * BD : 0);
    int32_t first[C], second[C];
    for (int c = 0, l = lane_index(); c < C; ++c, l += P) {
        first[c] = l < target && l < n ? frontier[l] : -1;
        second[c] = l < target && l + target < n ? frontier[l + target] : -1;
    }
    block_sync();  // every lane has its subtrees: the records may overwrite the frontier
    for (int c = 0, l = lane_index(); c < C; ++c, l += P) {
        if (l < BD) detail::tq_begin(detail::tq_lane(q, l), first[c], second[c]);
    }
    if (lane_index() == 0) h.idle = n < target, h.busy = n > 0;
    block_sync();
}

// The next batch: lane l's next hit into element l of `out`, -1 where it has none. `done`: the lanes
// of this thread that returned (TW_VARYING tw_done, indexed as the thread's register slots), or null;
// they are handed nothing, and what they held goes to other lanes.
template <int BD, typename D, typename Q>
TW_FUNC void tile_bvh_query_next(D& out, Q& q, int active, const bool* done) {
    constexpr int P = Q::threads;
    static_assert(D::threads == P, "the result tile is spread over the query's threads");
    detail::bvh_tile_head_t& h = detail::tq_head<BD>(q);
    const bool spread = h.idle && h.busy;  // unchanged since the barrier that ended the last call
    const bvh_query_t base = h.base;
    if (active > BD) active = BD;
    bool orphan = false, live = false;
    for (int c = 0, l = lane_index(); l < active; ++c, l += P) {  // mark the walks of lanes that returned
        int32_t* rec = detail::tq_lane(q, l);
        if (!(done && done[c])) {
            live = true;
        } else if (rec[detail::TQ_ROOT] >= 0) {
            rec[detail::TQ_OFFER] = detail::TQ_ORPHAN, orphan = true;
        } else {
            rec[detail::TQ_ROOT] = detail::TQ_RETIRED;
        }
    }
    if (orphan) *(volatile int32_t*)&h.orphan = 1;  // every writer writes 1
    if (live) *(volatile int32_t*)&h.live = 1;
    block_sync();  // every lane has read `valid` (the loop's test) and the old contents of `out`
    const bool anyone = h.live;
    if ((spread || h.orphan) && anyone) {
        for (int l = lane_index(); l < active; l += P) detail::tq_offer(base, detail::tq_lane(q, l));
        block_sync();
        if (lane_index() == 0) detail::tq_pair(q, base, active);
    }
    if (lane_index() == 0) h.valid = 0, h.idle = 0, h.busy = 0;
    block_sync();
    if (lane_index() == 0) h.orphan = 0, h.live = 0;  // read by every lane before the barrier above
    bool hit = false, idle = false, busy = false, held = false;
    TW_FOR_OWNED(BD, P, r, e) {
        int32_t* rec = detail::tq_lane(q, e);
        const bool gone = done && done[r];
        const int32_t item = e < active && !gone ? detail::tq_next_hit(base, rec) : -1;
        out.at(r, e) = item;
        hit |= item >= 0;
        if (e < active && !gone) (rec[detail::TQ_ROOT] >= 0 ? busy : idle) = true;
        held |= e < active && gone && rec[detail::TQ_ROOT] >= 0;  // still to be moved to a live lane
    }
    if (hit || (held && anyone)) *(volatile int32_t*)&h.valid = 1;
    if (idle) *(volatile int32_t*)&h.idle = 1;
    if (busy) *(volatile int32_t*)&h.busy = 1;
    block_sync();
}

// Whether the last batch held a hit (true before the first): the same in every lane.
template <int BD, typename Q> TW_FUNC bool tile_query_valid(const Q& q) {
    return *(volatile const int32_t*)&detail::tq_head<BD>(q).valid != 0;
}

}  // namespace tw

// The lanes that returned, for the kernels where none can: a kernel body where a lane may return
// declares its own `tw_done` (tilewarp/emit/block.py), which hides this one in the call of `next`.
constexpr bool* tw_done = nullptr;
