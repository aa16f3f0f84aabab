// tilewarp CPU runtime: a persistent thread pool behind a tiny C API (loaded through ctypes).
//
// tw_cpu_launch(fn, args, n, grain) runs fn(args, begin, end) over [0, n) in contiguous chunks,
// one chunk per thread, the caller running chunk 0. The split is static (chunk k depends only on
// n, grain, align and the thread count) so results that depend on the partition are reproducible.
// Workers spin briefly after each job (back-to-back launches from Python stay cheap), then sleep
// on a futex so an idle pool burns no CPU.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>
#include <vector>
#include <pthread.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#else
#include <condition_variable>
#include <mutex>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TW_PAUSE() _mm_pause()
#elif defined(__aarch64__)
#define TW_PAUSE() asm volatile("yield")
#else
#define TW_PAUSE() std::this_thread::yield()
#endif

#define TW_EXPORT extern "C" __attribute__((visibility("default")))

typedef void (*tw_task_fn)(const void* args, int64_t begin, int64_t end);

namespace {

constexpr int kMaxThreads = 512;
constexpr auto kSpinTime = std::chrono::microseconds(100);

// ---- wait/wake on a 32-bit word: futex on Linux, one global condvar elsewhere ----
#ifdef __linux__
void word_wait(std::atomic<uint32_t>& w, uint32_t old) {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&w), FUTEX_WAIT_PRIVATE, old, nullptr, nullptr, 0);
}
void word_wake(std::atomic<uint32_t>& w) {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&w), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}
#else
std::mutex g_wait_mu;
std::condition_variable g_wait_cv;
void word_wait(std::atomic<uint32_t>& w, uint32_t old) {
    std::unique_lock<std::mutex> lk(g_wait_mu);
    g_wait_cv.wait(lk, [&] { return w.load() != old; });
}
void word_wake(std::atomic<uint32_t>&) {
    std::lock_guard<std::mutex> lk(g_wait_mu);
    g_wait_cv.notify_all();
}
#endif

// Wait until `w` differs from `old`: spin for kSpinTime, then sleep. `sleeping` tells the waker a
// syscall is needed; both sides use seq_cst so either the waker sees sleeping=1 or the sleeper sees
// the new value (Dekker pattern), hence no lost wake-up.
uint32_t wait_change(std::atomic<uint32_t>& w, uint32_t old, std::atomic<uint32_t>& sleeping) {
    uint32_t v;
    auto deadline = std::chrono::steady_clock::now() + kSpinTime;
    for (unsigned k = 1;; ++k) {
        if ((v = w.load(std::memory_order_acquire)) != old) return v;
        TW_PAUSE();
        if ((k & 63) == 0 && std::chrono::steady_clock::now() > deadline) break;
    }
    sleeping.store(1);
    while ((v = w.load()) == old) word_wait(w, old);
    sleeping.store(0);
    return v;
}

// ---- static partition ----
int64_t chunk_count(int64_t n, int64_t grain, int64_t align, int nthreads) {
    if (n <= 0) return 0;
    int64_t by_grain = (n + grain - 1) / grain;
    int64_t by_align = (n + align - 1) / align;
    return std::max<int64_t>(1, std::min<int64_t>({(int64_t)nthreads, by_grain, by_align}));
}

// Start of chunk k of `chunks`: a balanced split of whole `align`-sized units, so chunk borders
// never cut a block of block_dim lanes in two.
inline int64_t chunk_begin(int64_t n, int64_t align, int64_t chunks, int64_t k) {
    int64_t units = (n + align - 1) / align;
    int64_t base = units / chunks, rem = units % chunks;
    return std::min(n, (k * base + std::min(k, rem)) * align);
}

struct alignas(64) Slot {
    std::atomic<uint32_t> gen{0};       // seq of the newest job offered to this worker (wake word)
    std::atomic<uint32_t> open{0};      // that seq while chunk i is unclaimed, 0 once claimed
    std::atomic<uint32_t> sleeping{0};
};

struct Job {
    tw_task_fn fn;
    const void* args;
    int64_t n, align, chunks;
};

// Chunk i (i >= 1) is offered to worker i, but whoever claims it first runs it: the caller takes
// any chunk whose worker has not started once its own is done, so a launch never waits for a
// sleeping thread to wake up (tens of us on a VM). The ranges stay fixed; only who runs them varies.
struct Pool {
    explicit Pool(int nthreads) : nthreads(nthreads), slots(new Slot[nthreads]) {
        for (int i = 1; i < nthreads; ++i) workers.emplace_back([this, i] { work(i); });
    }
    ~Pool() {
        stop.store(true);
        uint32_t s = next_seq();
        for (int i = 1; i < nthreads; ++i) {
            slots[i].gen.store(s);
            word_wake(slots[i].gen);
        }
        for (auto& t : workers) t.join();
        delete[] slots;
    }
    uint32_t next_seq() { return ++seq ? seq : ++seq; }  // never 0 (0 means claimed)
    void run_chunk(int64_t k) {
        int64_t b = chunk_begin(job.n, job.align, job.chunks, k);
        int64_t e = chunk_begin(job.n, job.align, job.chunks, k + 1);
        if (b < e) job.fn(job.args, b, e);
    }
    void work(int i) {
        uint32_t seen = 0;
        for (;;) {
            seen = wait_change(slots[i].gen, seen, slots[i].sleeping);
            if (stop.load(std::memory_order_acquire)) return;
            uint32_t expect = seen;  // fails if the caller took the chunk or a newer job is out
            if (!slots[i].open.compare_exchange_strong(expect, 0, std::memory_order_acquire)) continue;
            run_chunk(i);
            if (pending.fetch_sub(1) == 1 && caller_sleeping.load()) word_wake(pending);
        }
    }
    // Caller side; the launch flag is held, so only one job is in flight.
    void run(const Job& j) {
        job = j;
        uint32_t s = next_seq();
        pending.store(uint32_t(j.chunks - 1), std::memory_order_relaxed);
        for (int64_t i = 1; i < j.chunks; ++i) {
            slots[i].open.store(s, std::memory_order_release);
            slots[i].gen.store(s);  // seq_cst: publishes `job`, pairs with `sleeping`
            if (slots[i].sleeping.load()) word_wake(slots[i].gen);
        }
        run_chunk(0);
        uint32_t taken = 0;
        for (int64_t i = 1; i < j.chunks; ++i) {
            uint32_t expect = s;
            if (slots[i].open.compare_exchange_strong(expect, 0, std::memory_order_acquire)) {
                run_chunk(i);
                ++taken;
            }
        }
        uint32_t left = taken ? pending.fetch_sub(taken) - taken : pending.load(std::memory_order_acquire);
        auto deadline = std::chrono::steady_clock::now() + kSpinTime;
        for (unsigned k = 1; left != 0; ++k, left = pending.load(std::memory_order_acquire)) {
            TW_PAUSE();
            if ((k & 63) == 0 && std::chrono::steady_clock::now() > deadline) {
                caller_sleeping.store(1);
                while ((left = pending.load()) != 0) word_wait(pending, left);
                caller_sleeping.store(0);
                break;
            }
        }
    }

    int nthreads;
    Slot* slots;
    std::vector<std::thread> workers;
    Job job{};
    uint32_t seq = 0;
    alignas(64) std::atomic<uint32_t> pending{0};
    std::atomic<uint32_t> caller_sleeping{0};
    std::atomic<bool> stop{false};
};

int default_threads() {
    if (const char* s = std::getenv("TILEWARP_NUM_THREADS")) {
        int v = std::atoi(s);
        if (v > 0) return std::min(v, kMaxThreads);
    }
    int hw = 0;
#ifdef __linux__
    cpu_set_t set;  // honour taskset/cpuset limits, not just the machine's core count
    if (sched_getaffinity(0, sizeof(set), &set) == 0) hw = CPU_COUNT(&set);
#endif
    if (hw <= 0) hw = int(std::thread::hardware_concurrency());
    return std::max(1, std::min(hw, kMaxThreads));
}

std::atomic<int> g_nthreads{0};  // 0: not read yet
Pool* g_pool = nullptr;          // created on the first parallel launch; guarded by g_busy
// A flag rather than a mutex: try-acquire from a thread that already holds it (a kernel that
// launches) is well defined and simply falls back to running serially.
std::atomic<bool> g_busy{false};

inline int nthreads() {
    int t = g_nthreads.load(std::memory_order_relaxed);
    if (t == 0) {
        t = default_threads();
        g_nthreads.store(t, std::memory_order_relaxed);
    }
    return t;
}

void acquire_busy() {
    while (g_busy.exchange(true, std::memory_order_acquire)) std::this_thread::yield();
}

// After fork only the forking thread exists: the old pool's workers are gone, so drop (leak) it and
// let the next launch build a fresh one. The forking thread cannot be inside a launch itself.
void after_fork_child() {
    g_pool = nullptr;
    g_busy.store(false);
#ifndef __linux__
    new (&g_wait_mu) std::mutex();
#endif
}

struct AtforkRegistration {
    AtforkRegistration() { pthread_atfork(nullptr, nullptr, after_fork_child); }
} g_atfork;

}  // namespace

TW_EXPORT int tw_cpu_num_threads() { return nthreads(); }

TW_EXPORT void tw_cpu_set_num_threads(int n) {
    acquire_busy();
    delete g_pool;  // joins the workers
    g_pool = nullptr;
    g_nthreads.store(n > 0 ? std::min(n, kMaxThreads) : default_threads());
    g_busy.store(false, std::memory_order_release);
}

// Writes the chunk borders of a launch (bounds[0..chunks]) if cap allows; returns the chunk count.
TW_EXPORT int64_t tw_cpu_partition(int64_t n, int64_t grain, int64_t align, int64_t* bounds, int64_t cap) {
    grain = std::max<int64_t>(grain, 1);
    align = std::max<int64_t>(align, 1);
    int64_t chunks = n <= grain ? (n > 0) : chunk_count(n, grain, align, nthreads());
    if (chunks == 0 && cap > 0) bounds[0] = 0;
    for (int64_t k = 0; chunks > 0 && k <= chunks && k < cap; ++k)
        bounds[k] = chunk_begin(n, align, chunks, k);
    return chunks;
}

// As tw_cpu_launch, with chunk borders at multiples of `align` (the block size of tile kernels).
TW_EXPORT void tw_cpu_launch_ex(tw_task_fn fn, const void* args, int64_t n, int64_t grain, int64_t align) {
    if (n <= grain || n <= 0) {  // the common tiny launch: no atomics, no wake-up
        if (n > 0) fn(args, 0, n);
        return;
    }
    grain = std::max<int64_t>(grain, 1);
    align = std::max<int64_t>(align, 1);
    int64_t chunks = chunk_count(n, grain, align, nthreads());
    if (chunks <= 1) {
        fn(args, 0, n);
        return;
    }
    if (g_busy.exchange(true, std::memory_order_acquire)) {
        // Pool in use (another Python thread, or a nested launch): same chunks, run in order here.
        for (int64_t k = 0; k < chunks; ++k) {
            int64_t b = chunk_begin(n, align, chunks, k), e = chunk_begin(n, align, chunks, k + 1);
            if (b < e) fn(args, b, e);
        }
        return;
    }
    if (!g_pool || g_pool->nthreads != nthreads()) {
        delete g_pool;
        g_pool = new Pool(nthreads());
    }
    g_pool->run(Job{fn, args, n, align, chunks});
    g_busy.store(false, std::memory_order_release);
}

TW_EXPORT void tw_cpu_launch(tw_task_fn fn, const void* args, int64_t n, int64_t grain) {
    tw_cpu_launch_ex(fn, args, n, grain, 1);
}

// wp.launch's entry, the same shape as tw_cuda_submit (native/runtime/cuda_launch.cpp) so one
// caller serves both backends: `args` is the kernel's argument block, which starts with its
// tw::launch_bounds_t (the task count at byte 24); the rest comes from the record.
struct tw_cpu_rec {
    tw_task_fn fn;
    const int64_t* min_parallel_tasks;  // the backend's setting, read at each launch
    int64_t block_dim;
    // This kernel's own grain, once an inline launch of it ran long enough to be worth splitting
    // (0 before): a launch of a few heavy tasks (a tree refit over 8 subtrees, say) goes to the pool
    // like one of many light ones.
    int64_t grain;
};

namespace {
// An inline launch slower than this would have gained from the pool (waking it costs ~2-10 us) ...
constexpr int64_t kSplitAfterNs = 50000;
// ... and its kernel's later launches split into chunks of at least this much work.
constexpr int64_t kChunkNs = 20000;
}  // namespace

TW_EXPORT int tw_cpu_submit(tw_cpu_rec* rec, const char* args) {
    int64_t n;
    memcpy(&n, args + 24, sizeof n);
    int64_t grain = *rec->min_parallel_tasks;
    int64_t learned = __atomic_load_n(&rec->grain, __ATOMIC_RELAXED);
    if (learned > 0 && learned < grain) grain = learned;
    if (n > 1 && n <= grain && nthreads() > 1) {  // inline, timed: is this kernel heavier than it looks?
        auto start = std::chrono::steady_clock::now();
        rec->fn(args, 0, n);
        int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
                         .count();
        if (ns > kSplitAfterNs) {
            int64_t per_task = std::max<int64_t>(ns / n, 1);
            __atomic_store_n(&rec->grain, std::max<int64_t>(1, kChunkNs / per_task), __ATOMIC_RELAXED);
        }
        return 0;
    }
    tw_cpu_launch_ex(rec->fn, args, n, grain, rec->block_dim);
    return 0;
}
