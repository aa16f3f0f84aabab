// tile_matmul through cuBLASDx (nvidia-mathdx), on CUDA where the kernel's module asks for it
// (enable_mathdx_gemm): the reference implementation our own paths (mma.h) are measured against,
// and the route for shapes they do not cover. Included only by such modules (emit/cpp.py), whose
// NVRTC options add the MathDx and CUDA headers (compile/nvrtc.py): cuBLASDx's front end costs
// 10-20 s a kernel, which no other kernel should pay.
#pragma once
#include "shape.h"
#if TW_IS_CUDA
#include <cuda_fp16.h>
#include <cublasdx.hpp>
#endif

namespace tw {
namespace detail {
template <typename T> struct dx_type { typedef T type; };
#if TW_IS_CUDA
template <> struct dx_type<half> { typedef __half type; };
#endif
}  // namespace detail

// out = alpha * a @ b + beta * c with row-major shared operands; elsewhere (the CPU, register or
// strided tiles) the same as tile_matmul
template <typename D, typename A, typename B, typename C, typename S>
TW_FUNC void tile_matmul_dx(D& out, const A& a, const B& b, const C& c, S alpha, S beta) {
#if TW_IS_CUDA
    if constexpr (detail::is_rowmajor_shared<A>::value && detail::is_rowmajor_shared<B>::value &&
                  detail::is_rowmajor_shared<D>::value) {
        using namespace cublasdx;
        typedef typename detail::dx_type<typename A::value_type>::type TA;
        typedef typename detail::dx_type<typename B::value_type>::type TB;
        typedef typename detail::dx_type<typename D::value_type>::type TC;
        constexpr int M = A::shape::extent(0), K = A::shape::extent(1), N = B::shape::extent(1);
        using BLAS = decltype(Size<M, N, K>() + Precision<TA, TB, TC>() + Type<type::real>() +
                              Function<function::MM>() + Arrangement<row_major, row_major, row_major>() + Block() +
                              BlockDim<A::threads>() + SM<TW_DX_SM>());
        // out starts as c, or as zeros where beta is 0 (c is then never read: it may hold NaN)
        tile_fill_with(out, [&](int r, int e) {
            return beta == S(0) ? typename D::value_type() : typename D::value_type(c.at(r, e));
        });
        auto sa = cublasdx::make_tensor(reinterpret_cast<TA*>(a.data), BLAS::get_layout_smem_a());
        auto sb = cublasdx::make_tensor(reinterpret_cast<TB*>(b.data), BLAS::get_layout_smem_b());
        auto sc = cublasdx::make_tensor(reinterpret_cast<TC*>(out.data), BLAS::get_layout_smem_c());
        BLAS().execute(TC(alpha), sa, sb, TC(beta == S(0) ? S(1) : beta), sc);
        block_sync();
        return;
    }
#endif
    tile_matmul(out, a, b, c, alpha, beta);
}
}  // namespace tw
