// Support for generated backward code: accumulating adjoints and rewinding loops.
#pragma once
#include "target.h"
#include "tuple.h"

namespace tw {

// adj += g for any value type with an `add` (scalars, vectors, matrices, quaternions, ...).
template <typename T> TW_FUNC void adj_accum(T& adj, const T& g) { adj = add(adj, g); }
TW_FUNC void adj_accum(bool&, const bool&) {}
TW_FUNC void adj_accum(tuple_t<>&, const tuple_t<>&) {}
template <typename H, typename... Ts> TW_FUNC void adj_accum(tuple_t<H, Ts...>& adj, const tuple_t<H, Ts...>& g) {
    adj_accum(adj.head, g.head);
    adj_accum(adj.tail, g.tail);
}

// The reverse of a loop visits iterations last to first, each needing the loop-carried state
// (S) it started with. Storing every state needs memory proportional to the trip count, which a
// GPU thread does not have; replaying from the loop entry every time costs O(n^2). rewind_t keeps
// LEVELS levels of CAP checkpoints: level 0 spans the whole loop at stride ceil(n/CAP), level l+1
// the level-l segment holding the iteration asked for. Asked in decreasing order, each level is
// rebuilt once per parent segment, so up to CAP^LEVELS iterations cost about LEVELS extra
// forward passes; beyond that the last level replays from its nearest checkpoint.
template <typename S, int CAP, int LEVELS> struct rewind_t {
    union storage_t {  // left uninitialised: a thread fills only the slots its loop uses
        S buf[LEVELS][CAP];
        TW_FUNC storage_t() {}
    } st;
    int64_t lo[LEVELS], hi[LEVELS], stride[LEVELS];
    int64_t n;
    int built;  // levels [0, built) hold valid checkpoints
    S entry;

    // On the CPU the replay records the first CAP states as it goes; a loop that ends within them
    // needs no recomputation at all in the reverse pass. On CUDA the states are a thread's local
    // memory, which is DRAM traffic at full occupancy (a 4-iteration loop over 16M threads moved
    // 3 GB): a loop of at most REPLAY iterations is replayed from its entry for each iteration
    // instead (at most REPLAY (REPLAY - 1) / 2 extra steps, in registers), longer ones checkpoint.
    static constexpr int REPLAY = TW_IS_CUDA ? 8 : 0;
    TW_FUNC void start(const S& state_at_entry) {
        entry = state_at_entry;
        built = 0;
    }
    TW_FUNC void record(const S& state, int64_t m) {
        if (!TW_IS_CUDA && m < CAP) st.buf[0][m] = state;
    }
    TW_FUNC void finish(int64_t count) {
        n = count;
        built = !TW_IS_CUDA && count <= CAP ? 1 : 0;
        lo[0] = 0;
        hi[0] = count;
        stride[0] = 1;
    }

    // Leave the live variables (through set) holding the state at the start of iteration j.
    template <typename Get, typename Set, typename Step>
    TW_FUNC void restore(int64_t j, const Get& get, const Set& set, const Step& step) {
        if (n <= REPLAY) {
            set(entry);
            for (int64_t m = 0; m < j; ++m) step(m);
            return;
        }
        for (int l = 0;; ++l) {
            if (l >= built || j < lo[l] || j >= hi[l]) build(l, j, get, set, step);
            int64_t k = (j - lo[l]) / stride[l];
            if (stride[l] == 1) {
                set(st.buf[l][k]);
                return;
            }
            if (l == LEVELS - 1) {
                set(st.buf[l][k]);
                for (int64_t m = lo[l] + k * stride[l]; m < j; ++m) step(m);
                return;
            }
        }
    }

    template <typename Get, typename Set, typename Step>
    TW_FUNC void build(int l, int64_t j, const Get& get, const Set& set, const Step& step) {
        if (l == 0) {
            lo[0] = 0;
            hi[0] = n;
            set(entry);
        } else {
            int64_t k = (j - lo[l - 1]) / stride[l - 1];
            lo[l] = lo[l - 1] + k * stride[l - 1];
            hi[l] = lo[l] + stride[l - 1] < hi[l - 1] ? lo[l] + stride[l - 1] : hi[l - 1];
            set(st.buf[l - 1][k]);
        }
        int64_t len = hi[l] - lo[l];
        stride[l] = (len + CAP - 1) / CAP;
        int64_t last = lo[l] + ((len - 1) / stride[l]) * stride[l];  // the last checkpoint taken
        for (int64_t m = lo[l];; ++m) {
            if ((m - lo[l]) % stride[l] == 0) st.buf[l][(m - lo[l]) / stride[l]] = get();
            if (m == last) break;
            step(m);
        }
        built = l + 1;
    }
};

}  // namespace tw
