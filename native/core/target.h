// Target abstraction: the same headers compile under g++ (CPU .so) and NVRTC (CUDA cubin).
#pragma once

#if defined(__CUDACC__) || defined(TW_CUDA)
#define TW_IS_CUDA 1
#else
#define TW_IS_CUDA 0
#endif

#if TW_IS_CUDA
// NVRTC: no system headers, so the fixed-width typedefs are spelled out (LP64 device ABI).
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#define TW_FUNC __device__ inline
// No `inline` here: TW_FORCEINLINE is combined with TW_FUNC, and `inline inline` is ill-formed.
#define TW_FORCEINLINE __attribute__((always_inline))
// A large helper called from several places, kept out of line on CUDA: inlining every call of it
// multiplies the kernel and NVRTC's compile time (the host compiler decides for itself).
#define TW_OUTLINE __device__ __noinline__
#define TW_EXPORT
#else
#include <cmath>
#include <cstdint>
#define TW_FUNC inline
#define TW_FORCEINLINE __attribute__((always_inline))
#define TW_OUTLINE inline
#define TW_EXPORT __attribute__((visibility("default")))
#endif

// Unroll a loop with a constant trip count on CUDA (the host compiler decides for itself).
#if TW_IS_CUDA
#define TW_UNROLL _Pragma("unroll")
#else
#define TW_UNROLL
#endif

// A loop with a constant trip count of at most wp.config.max_unroll (emit/cpp.py): unrolled whole,
// as Warp does, so that its counter folds into constants in every copy
#if TW_IS_CUDA || defined(__clang__)
#define TW_UNROLL_ALL _Pragma("unroll")
#else
#define TW_UNROLL_ALL _Pragma("GCC unroll 64")
#endif

#define TW_CONCAT_(a, b) a##b
#define TW_CONCAT(a, b) TW_CONCAT_(a, b)

// Kernel entry: BODY(const ARGS&, TW_TASK task, DEFERRED&) runs once per task (TW_TASK converts to the
// task's int64_t number; on the CPU it also holds the task's launch coordinates). DEFERRED is what a
// thread defers over its tasks (combined atomics, tilewarp/tiling/combine.py; tw::no_deferred: none),
// flushed after its last.
#if TW_IS_CUDA
#define TW_TASK int64_t
#define TW_KERNEL_ENTRY_SMALL TW_KERNEL_ENTRY
#define TW_KERNEL_ENTRY(NAME, ARGS, BODY, DEFERRED)                                         \
    extern "C" __global__ void NAME(ARGS args) {                                            \
        DEFERRED tw_deferred;                                                               \
        for (int64_t task = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;                 \
             task < args.bounds.size; task += (int64_t)gridDim.x * blockDim.x)              \
            BODY(args, task, tw_deferred);                                                  \
        tw_deferred.flush();                                                                \
    }
#else
// CPU: the thread pool hands each worker a [begin, end) task range.
// The task carries its launch coordinates (tw::cpu_task): worked out once per row of the innermost
// launch dimension, then only that coordinate steps, in a plain counted loop the compiler can
// vectorise. TW_KERNEL_ENTRY_SMALL (a body of a few statements, emit/cpp.py small_body) also runs a
// one-dimensional launch in a loop of its own, where the coordinate is the task number and the
// compiler strength-reduces the addresses: a contended atomic sum ran 1.3 -> 0.9 ms. Only small
// bodies, because the body is inlined twice: SPH's and DEM's kernels took twice as long to compile.
#define TW_TASK tw::cpu_task
#define TW_KERNEL_ENTRY_WITH(NAME, ARGS, BODY, DEFERRED, ONE_D)                             \
    extern "C" TW_EXPORT void NAME(const void* a, int64_t begin, int64_t end) {             \
        const ARGS args = *static_cast<const ARGS*>(a); /* a local copy: no store can alias it, \
            so descriptors stay in registers and null checks are hoisted out of the loop */      \
        const int last = args.bounds.ndim - 1;                                              \
        DEFERRED tw_deferred;                                                               \
        if constexpr (ONE_D) {                                                              \
            if (last == 0) {                                                                \
                for (tw::cpu_task task(begin); task.linear < end; ++task.linear, ++task.inner) \
                    BODY(args, task, tw_deferred);                                          \
                tw_deferred.flush();                                                        \
                return;                                                                     \
            }                                                                               \
        }                                                                                   \
        for (int64_t row = begin; row < end;) {                                             \
            tw::cpu_task task(args.bounds, row);                                            \
            const int64_t row_end = tw::min_i64(end, row + args.bounds.shape[last] - task.inner); \
            for (; task.linear < row_end; ++task.linear, ++task.inner) BODY(args, task, tw_deferred); \
            row = row_end;                                                                  \
        }                                                                                   \
        tw_deferred.flush();                                                                \
    }
#define TW_KERNEL_ENTRY(NAME, ARGS, BODY, DEFERRED) TW_KERNEL_ENTRY_WITH(NAME, ARGS, BODY, DEFERRED, false)
#define TW_KERNEL_ENTRY_SMALL(NAME, ARGS, BODY, DEFERRED) TW_KERNEL_ENTRY_WITH(NAME, ARGS, BODY, DEFERRED, true)
#endif

// ---------------------------------------------------------------------------------------
// Debug error slot. One per module (= one kernel): the host resets `tw_error_state` before a
// debug launch, reads it after (cuModuleGetGlobal on CUDA, dlsym on CPU) and reports the first
// failure. Generated code names places by *site* ids, not file:line: the host keeps the table
// site -> (user file:line, array), so moving a script never changes a kernel's cache key.
namespace tw {
enum error_code : int32_t {
    ERR_NONE = 0,
    ERR_BOUNDS = 1,   // array index outside [-extent, extent) of dimension `dim`
    ERR_ASSERT = 2,   // a user `assert` (site >= 0) or a native check (site -1, index = header line)
    ERR_NAN = 3,
    ERR_INDEXED = 4,  // an indexedarray's index array maps `index` outside its data array's `extent`
    ERR_DIVZERO = 5,  // an integer `/`, `%` or `//` by zero
    ERR_NULL = 6,     // a read or write of a null array (None passed for it)
    ERR_NOT_SPD = 7,  // tile_cholesky: pivot `index` of `extent` not positive (the matrix is not SPD)
};

struct error_state_t {
    int32_t code;   // error_code of the first failure, 0 if none
    int32_t site;   // emitter site id (the host maps it to file:line and array), -1 if unknown
    int32_t arg;    // kernel argument index of the array, -1 if unknown
    int32_t dim;    // offending dimension for bounds errors
    int64_t index;  // offending index
    int64_t extent; // shape of that dimension
};

// Where an access happens: the emitter's site id and the kernel argument it reaches, or -1.
struct src_loc {
    int32_t site;
    int32_t arg;
};
}  // namespace tw

#define TW_LOC(SITE, ARG) (tw::src_loc{(SITE), (ARG)})

#if defined(TW_DEBUG)
#if TW_IS_CUDA
extern "C" {
__device__ tw::error_state_t tw_error_state;
}
#else
// weak: tolerates several debug translation units linked into one .so.
extern "C" {
TW_EXPORT __attribute__((weak)) tw::error_state_t tw_error_state = {0, 0, 0, 0, 0, 0};
}
#endif

namespace tw {
// Records only the first failure: whoever flips `code` from 0 writes the details.
TW_FUNC void report_error(int32_t code, int32_t site, int32_t arg, int32_t dim, int64_t index,
                          int64_t extent) {
#if TW_IS_CUDA
    if (atomicCAS(&tw_error_state.code, 0, code) != 0) return;
#else
    int32_t expected = 0;
    if (!__atomic_compare_exchange_n(&tw_error_state.code, &expected, code, false,
                                     __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return;
#endif
    tw_error_state.site = site;
    tw_error_state.arg = arg;
    tw_error_state.dim = dim;
    tw_error_state.index = index;
    tw_error_state.extent = extent;
}
TW_FUNC constexpr bool debug_build() { return true; }
}  // namespace tw

// Native-internal checks (no user site): the header line goes into `index`.
#define TW_ASSERT(cond) \
    do { if (!(cond)) tw::report_error(tw::ERR_ASSERT, -1, -1, -1, __LINE__, 0); } while (0)
// A user `assert` at emitter site SITE.
#define TW_ASSERT_AT(cond, SITE) \
    do { if (!(cond)) tw::report_error(tw::ERR_ASSERT, (SITE), -1, -1, 0, 0); } while (0)
#else
namespace tw {
TW_FUNC constexpr bool debug_build() { return false; }
}  // namespace tw
#define TW_ASSERT(cond) do { } while (0)
#define TW_ASSERT_AT(cond, SITE) do { } while (0)
#endif

namespace tw {
namespace detail {
// Minimal <type_traits> stand-ins (NVRTC has no standard headers).
template <bool B, typename T = void> struct enable_if {};
template <typename T> struct enable_if<true, T> { typedef T type; };
template <bool B, typename T = void> using enable_if_t = typename enable_if<B, T>::type;
template <typename A, typename B> struct is_same { static constexpr bool value = false; };
template <typename A> struct is_same<A, A> { static constexpr bool value = true; };
}  // namespace detail
}  // namespace tw
