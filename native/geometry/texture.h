// wp.Texture1D / 2D / 3D in kernels: texture_sample and its adjoint.
//
// A texture is a plain buffer of texels (every mip level, level 0 first, each row-major with x
// fastest and channels interleaved), read by software filtering: the CPU and CUDA run this same code
// (Warp uses the CUDA texture unit; here no CUDA array is involved). Kernels get the descriptor by value.
//
// Sampling follows the CUDA texture conventions Warp documents: texel i is centred at i + 0.5 (in
// texel units; normalized coordinates are multiplied by the level's size first); LINEAR filtering
// interpolates the 2^N texels around the point, CLOSEST takes the texel containing it; WRAP and
// MIRROR repeat the texture with period size (MIRROR: 2 * size, the second copy reversed), CLAMP
// repeats the edge texels, BORDER reads zeros outside. Mip levels blend linearly in the LOD (or take
// the nearest level). Unsigned 8/16-bit texels read as [0, 1], signed ones as [-1, 1], 32-bit
// integers convert to float without scaling.
//
// The arithmetic is in double: coordinates far outside the texture (up to FLT_MAX, in texel units
// beyond float's range) reduce exactly into one period, interpolation of texels near FLT_MAX cannot
// overflow, and a constant region interpolates to exactly its value. Gradients flow to the
// coordinates and the LOD (never to the texels), each the derivative of the branch the forward
// sample took; CLOSEST filtering is piecewise constant, so its gradients are zero.
#pragma once

namespace tw {

// The descriptor (`Tex` below) is the @wp.struct tilewarp/builtins/texture.py defines (TextureDesc1D
// ...), emitted into each kernel's source like any struct, so that a user struct holding a texture
// compiles in a kernel that never samples it. Its members:
//   uint64_t f_data;                         the texels of every level
//   int32_t f_width, f_height, f_depth;      level 0's size (1 along the axes a texture lacks)
//   int32_t f_num_channels;                  1, 2 or 4
//   int32_t f_format;                        texel type: see detail::tex_read
//   int32_t f_filter_mode, f_mip_filter_mode;             0 closest, 1 linear
//   int32_t f_num_mip_levels, f_use_normalized_coords;
//   int32_t f_address_mode_u, f_address_mode_v, f_address_mode_w;  0 wrap, 1 clamp, 2 mirror, 3 border

namespace detail {
enum { TEX_WRAP = 0, TEX_CLAMP = 1, TEX_MIRROR = 2, TEX_BORDER = 3 };

TW_FUNC double tex_floor(double x) {
#if TW_IS_CUDA
    return ::floor(x);
#else
    return std::floor(x);
#endif
}

TW_FUNC double tex_fmod(double x, double p) {
#if TW_IS_CUDA
    return ::fmod(x, p);
#else
    return std::fmod(x, p);
#endif
}

// Element sizes of the texel formats (tilewarp/geometry/texture.py: FORMATS, in this order).
TW_FUNC int tex_format_size(int format) {
    const int sizes[8] = {4, 2, 1, 1, 2, 2, 4, 4};
    return sizes[format & 7];
}

// Channel value of a texel as a double: float32, float16, uint8, int8, uint16, int16, uint32, int32.
TW_FUNC double tex_read(const uint8_t* p, int format) {
    switch (format) {
        case 0: return (double)*reinterpret_cast<const float*>(p);
        case 1: return (double)f16_to_f32(*reinterpret_cast<const uint16_t*>(p));
        case 2: return (double)*p / 255.0;
        case 3: { double v = (double)*reinterpret_cast<const int8_t*>(p) / 127.0; return v < -1.0 ? -1.0 : v; }
        case 4: return (double)*reinterpret_cast<const uint16_t*>(p) / 65535.0;
        case 5: { double v = (double)*reinterpret_cast<const int16_t*>(p) / 32767.0; return v < -1.0 ? -1.0 : v; }
        case 6: return (double)*reinterpret_cast<const uint32_t*>(p);
        default: return (double)*reinterpret_cast<const int32_t*>(p);
    }
}

// Where one axis of a sample reads: texels i0 and i1 (-1: a BORDER zero) and the weight f of i1.
struct tex_axis {
    int32_t i0, i1;
    double f;
};

// An integer texel position mapped into [0, n) by the address mode, or -1 outside a BORDER texture.
TW_FUNC int32_t tex_address(int64_t i, int32_t n, int mode) {
    if (mode == TEX_WRAP) {
        int64_t m = i % n;
        return (int32_t)(m < 0 ? m + n : m);
    }
    if (mode == TEX_MIRROR) {
        int64_t m = i % (2 * (int64_t)n);
        m = m < 0 ? m + 2 * (int64_t)n : m;
        return (int32_t)(m < n ? m : 2 * (int64_t)n - 1 - m);
    }
    if (mode == TEX_CLAMP) return (int32_t)(i < 0 ? 0 : (i >= n ? n - 1 : i));
    return (i < 0 || i >= n) ? -1 : (int32_t)i;
}

// The texel-space position of coordinate u on an axis of n texels, brought into a bounded range
// that keeps the sample: one period for WRAP / MIRROR (fmod is exact, so floor(x) keeps its value
// modulo the period), a margin beyond the edges for CLAMP / BORDER (every point there reads the same).
TW_FUNC double tex_position(float u, int32_t n, double scale, int mode) {
    double x = (double)u * scale;
    if (!(x == x)) return 0.0;  // NaN: read texel 0 rather than index with garbage
    if (mode == TEX_WRAP || mode == TEX_MIRROR) {
        double period = (mode == TEX_MIRROR ? 2.0 : 1.0) * (double)n;
        if (x - x != 0.0) return 0.0;  // +-inf: no position within a period
        return tex_fmod(x, period);  // in (-period, period), same sign as x
    }
    double lo = -2.0, hi = (double)n + 2.0;
    return x < lo ? lo : (x > hi ? hi : x);
}

TW_FUNC tex_axis tex_axis_at(float u, int32_t n, double scale, int mode, bool linear) {
    double x = tex_position(u, n, scale, mode);
    tex_axis a;
    if (linear) {
        double xb = x - 0.5, fl = tex_floor(xb);
        int64_t i = (int64_t)fl;
        a.i0 = tex_address(i, n, mode), a.i1 = tex_address(i + 1, n, mode), a.f = xb - fl;
    } else {
        a.i0 = a.i1 = tex_address((int64_t)tex_floor(x), n, mode), a.f = 0.0;
    }
    return a;
}

// One mip level: its texels and size.
struct tex_level {
    const uint8_t* texels;
    int32_t size[3];
    int32_t stride;  // bytes per texel
};

template <int N, typename Tex> TW_FUNC tex_level tex_level_at(const Tex& t, int level) {
    tex_level out;
    out.stride = tex_format_size(t.f_format) * t.f_num_channels;
    int32_t dims[3] = {t.f_width, N > 1 ? t.f_height : 1, N > 2 ? t.f_depth : 1};
    uint64_t offset = 0;
    for (int l = 0; l < level; ++l) {
        uint64_t count = 1;
        for (int a = 0; a < 3; ++a) {
            count *= (uint64_t)dims[a];
            dims[a] = dims[a] > 1 ? dims[a] / 2 : 1;
        }
        offset += count * (uint64_t)out.stride;
    }
    out.texels = reinterpret_cast<const uint8_t*>(t.f_data) + offset;
    for (int a = 0; a < 3; ++a) out.size[a] = dims[a];
    return out;
}

// (Warp's CUDA textures, read by the texture unit, clamp unnormalized coordinates in WRAP and MIRROR
// mode, a limitation its documentation states; here both devices repeat them, as Warp's CPU does.)
template <typename Tex> TW_FUNC int tex_mode(const Tex& t, int axis) {
    return axis == 0 ? t.f_address_mode_u : (axis == 1 ? t.f_address_mode_v : t.f_address_mode_w);
}

// a + f (b - a): exact where a == b, so a flat region stays flat (in double, b - a cannot overflow
// for texels in float's range)
TW_FUNC double tex_lerp(double a, double b, double f) { return a + f * (b - a); }

// The sample of C channels at one level, and (with grad) its derivatives in the N texel coordinates.
// corner k of the 2^N footprint takes texel i1 on axis a when bit a of k is set.
template <int N, int C, typename Tex>
TW_OUTLINE void tex_sample_level(const Tex& t, int level, const float* coords, double* value, double (*grad)[C]) {
    tex_level lv = tex_level_at<N>(t, level);
    bool linear = t.f_filter_mode != 0;
    // texel units per coordinate unit: the level's size (normalized coordinates), else the level's
    // size over the base level's (unnormalized coordinates count base-level texels)
    int32_t base[3] = {t.f_width, N > 1 ? t.f_height : 1, N > 2 ? t.f_depth : 1};
    double scale[N];
    tex_axis ax[N];
    for (int a = 0; a < N; ++a) {
        scale[a] = t.f_use_normalized_coords ? (double)lv.size[a] : (double)lv.size[a] / (double)base[a];
        ax[a] = tex_axis_at(coords[a], lv.size[a], scale[a], tex_mode(t, a), linear);
    }
    int channels = t.f_num_channels < C ? t.f_num_channels : C;
    int esize = tex_format_size(t.f_format);
    const int K = 1 << N;
    double v[K][C];
    for (int k = 0; k < K; ++k) {
        int64_t offset = 0, scale = 1;
        bool border = false;
        for (int a = 0; a < N; ++a) {
            int32_t i = ((k >> a) & 1) ? ax[a].i1 : ax[a].i0;
            border = border || i < 0;
            offset += (int64_t)i * scale;
            scale *= lv.size[a];
        }
        for (int c = 0; c < C; ++c) {
            const uint8_t* texel = lv.texels + offset * lv.stride + c * esize;
            v[k][c] = (border || c >= channels) ? 0.0 : tex_read(texel, t.f_format);
        }
    }
    double f[N];
    for (int a = 0; a < N; ++a) f[a] = ax[a].f;
    // axis by axis: pairs (2k, 2k+1) differ in the lowest remaining axis
    for (int c = 0; c < C; ++c) {
        for (int d = -1; d < (grad && linear ? N : 0); ++d) {
            double w[K];
            for (int k = 0; k < K; ++k) w[k] = v[k][c];
            int n = K;
            for (int a = 0; a < N; ++a) {
                n /= 2;
                for (int k = 0; k < n; ++k) {
                    w[k] = a == d ? w[2 * k + 1] - w[2 * k] : tex_lerp(w[2 * k], w[2 * k + 1], f[a]);
                }
            }
            if (d < 0) {
                value[c] = w[0];
            } else {
                grad[d][c] = w[0] * scale[d];  // d(x)/d(u)
            }
        }
        if (grad && !linear) {
            for (int a = 0; a < N; ++a) grad[a][c] = 0.0;
        }
    }
}

// The sample at `lod` (negative: level 0), its coordinate derivatives and its LOD derivative.
template <int N, int C, typename Tex>
TW_FUNC void tex_sample(const Tex& t, const float* coords, float lod, double* value, double (*grad)[C], double* dlod) {
    int top = t.f_num_mip_levels - 1;
    for (int c = 0; c < C; ++c) dlod[c] = 0.0;
    if (top <= 0 || !(lod >= 0.0f)) {
        tex_sample_level<N, C, Tex>(t, 0, coords, value, grad);
        return;
    }
    double l = (double)lod;
    bool clamped = l >= (double)top;
    if (clamped) l = (double)top;
    if (t.f_mip_filter_mode == 0) {  // the nearest level
        int level = (int)tex_floor(l + 0.5);
        tex_sample_level<N, C, Tex>(t, level > top ? top : level, coords, value, grad);
        return;
    }
    int l0 = (int)tex_floor(l);
    double s = l - (double)l0;
    if (l0 >= top) {
        tex_sample_level<N, C, Tex>(t, top, coords, value, grad);
        return;
    }
    double v1[C], g1[N][C];
    tex_sample_level<N, C, Tex>(t, l0, coords, value, grad);
    tex_sample_level<N, C, Tex>(t, l0 + 1, coords, v1, grad ? g1 : nullptr);
    for (int c = 0; c < C; ++c) {
        double v0 = value[c];
        value[c] = tex_lerp(v0, v1[c], s);
        if (!clamped) dlod[c] = v1[c] - v0;
        if (grad) {
            for (int a = 0; a < N; ++a) grad[a][c] = tex_lerp(grad[a][c], g1[a][c], s);
        }
    }
}

template <typename R> struct tex_result;
template <> struct tex_result<float> {
    static constexpr int C = 1;
    TW_FUNC static float make(const double* v) { return (float)v[0]; }
    TW_FUNC static double get(const float& r, int) { return (double)r; }
};
template <int C_> struct tex_result<vec_t<C_, float>> {
    static constexpr int C = C_;
    TW_FUNC static vec_t<C_, float> make(const double* v) {
        vec_t<C_, float> r;
        for (int c = 0; c < C_; ++c) r.c[c] = (float)v[c];
        return r;
    }
    TW_FUNC static double get(const vec_t<C_, float>& r, int c) { return (double)r.c[c]; }
};

template <typename R, int N, typename Tex> TW_FUNC R tex_forward(const Tex& t, const float* coords, float lod) {
    constexpr int C = tex_result<R>::C;
    double value[C], dlod[C];
    tex_sample<N, C, Tex>(t, coords, lod, value, (double(*)[C]) nullptr, dlod);
    return tex_result<R>::make(value);
}

// adj_coords[a] += sum_c adj_ret[c] * d(value c)/d(coordinate a); adj_lod likewise
template <typename R, int N, typename Tex>
TW_FUNC void tex_backward(const Tex& t, const float* coords, float lod, float* adj_coords, float& adj_lod,
                          const R& adj_ret) {
    constexpr int C = tex_result<R>::C;
    double value[C], grad[N][C], dlod[C];
    tex_sample<N, C, Tex>(t, coords, lod, value, grad, dlod);
    double gl = 0.0;
    for (int c = 0; c < C; ++c) {
        double seed = tex_result<R>::get(adj_ret, c);
        if (seed != 0.0) gl += seed * dlod[c];  // a zero seed adds nothing, even against inf
    }
    adj_lod += (float)gl;
    for (int a = 0; a < N; ++a) {
        double g = 0.0;
        for (int c = 0; c < C; ++c) {
            double seed = tex_result<R>::get(adj_ret, c);
            if (seed != 0.0) g += seed * grad[a][c];
        }
        adj_coords[a] += (float)g;
    }
}
}  // namespace detail

// ---- the builtins: texture_sample<R, N>(tex, coordinates..., lod) -> R (float, vec2f or vec4f) ------

template <typename R, int N, typename Tex> TW_FUNC R texture_sample(const Tex& t, float u, float lod) {
    return detail::tex_forward<R, 1>(t, &u, lod);
}
template <typename R, int N, typename Tex, int M>
TW_FUNC R texture_sample(const Tex& t, const vec_t<M, float>& coords, float lod) {
    static_assert(M == N, "texture_sample: one coordinate per texture axis");
    return detail::tex_forward<R, N>(t, coords.c, lod);
}
template <typename R, int N, typename Tex> TW_FUNC R texture_sample(const Tex& t, float u, float v, float lod) {
    float c[2] = {u, v};
    return detail::tex_forward<R, 2>(t, c, lod);
}
template <typename R, int N, typename Tex>
TW_FUNC R texture_sample(const Tex& t, float u, float v, float w, float lod) {
    float c[3] = {u, v, w};
    return detail::tex_forward<R, 3>(t, c, lod);
}

template <typename R, int N, typename Tex>
TW_FUNC void adj_texture_sample(const Tex& t, float u, float lod, Tex&, float& adj_u, float& adj_lod,
                                const R& adj_ret) {
    detail::tex_backward<R, 1>(t, &u, lod, &adj_u, adj_lod, adj_ret);
}
template <typename R, int N, typename Tex, int M>
TW_FUNC void adj_texture_sample(const Tex& t, const vec_t<M, float>& coords, float lod, Tex&,
                                vec_t<M, float>& adj_coords, float& adj_lod, const R& adj_ret) {
    detail::tex_backward<R, N>(t, coords.c, lod, adj_coords.c, adj_lod, adj_ret);
}
template <typename R, int N, typename Tex>
TW_FUNC void adj_texture_sample(const Tex& t, float u, float v, float lod, Tex&, float& adj_u, float& adj_v,
                                float& adj_lod, const R& adj_ret) {
    float c[2] = {u, v}, g[2] = {0.0f, 0.0f};
    detail::tex_backward<R, 2>(t, c, lod, g, adj_lod, adj_ret);
    adj_u += g[0], adj_v += g[1];
}
template <typename R, int N, typename Tex>
TW_FUNC void adj_texture_sample(const Tex& t, float u, float v, float w, float lod, Tex&, float& adj_u,
                                float& adj_v, float& adj_w, float& adj_lod, const R& adj_ret) {
    float c[3] = {u, v, w}, g[3] = {0.0f, 0.0f, 0.0f};
    detail::tex_backward<R, 3>(t, c, lod, g, adj_lod, adj_ret);
    adj_u += g[0], adj_v += g[1], adj_w += g[2];
}

}  // namespace tw
