// Perlin gradient noise (Warp 1.19's noise, pnoise, curlnoise) in 1 to 4 dimensions, with
// analytic adjoints with respect to the position. Included, after tilewarp.h, only by kernels
// that call them (Builtin.header).
//
// A lattice cell corner c gets a pseudo-random unit gradient g(c) (a uniform value in [-1, 1) in
// 1D); the noise at x is the n-linear blend, by the quintic fade 6t^5 - 15t^4 + 10t^3 of the
// fractional coordinates, of the corners' g(c) . (x - c). So it is 0 on the lattice, C2 (its
// Hessian, which curlnoise's adjoint needs, is continuous), and bounded by sqrt(n) / 2.
// pnoise wraps the corner coordinates by the periods before hashing, which makes it exactly
// periodic. The corner hash is Teschner et al.'s spatial hash ("Optimized Spatial Hashing for
// Collision Detection of Deformable Objects", 2003), the last coordinate's term offset by the
// state, fed to tilewarp's own random stream (randf, native/core/random.h): so the values differ
// from Warp's (its generator differs by design) but are identical on CPU and CUDA up to float
// rounding of the blend.
#pragma once

namespace tw {
namespace perlin {
TW_FUNC uint32_t prime(int i) {
    return i == 0 ? 73856093u : i == 1 ? 19349663u : i == 2 ? 83492791u : 2654435761u;
}
template <int N> TW_FUNC uint32_t cell_hash(uint32_t state, const int32_t* c) {
    uint32_t h = (uint32_t)c[N - 1] * prime(N - 1) + state;
    for (int i = 0; i < N - 1; ++i) h ^= (uint32_t)c[i] * prime(i);
    return h;
}
// The corner's gradient: successive randf draws from the hash, centred, then normalised (2D..4D).
template <int N> TW_FUNC void lattice_gradient(uint32_t h, float* g) {
    if (N == 1) {
        g[0] = 2.0f * randf(h) - 1.0f;
        return;
    }
    float len2 = 0.0f;
    for (int i = 0; i < N; ++i) {
        g[i] = randf(h) - 0.5f;
        h = rand_next(h);
        len2 += g[i] * g[i];
    }
    if (len2 > 0.0f) {  // all components exactly 0.5 away: probability 2^-24N, left as zero
        const float inv = 1.0f / sqrt(len2);
        for (int i = 0; i < N; ++i) g[i] *= inv;
    }
}
// The fade f(t) = 6t^5 - 15t^4 + 10t^3 and its first two derivatives, all 0 at t = 0 and 1
// (except f(1) = 1), so the blend and its slopes match across cell faces.
template <typename T> TW_FUNC void fade(T t, T& f, T& df, T& ddf) {
    f = t * t * t * (t * (t * T(6) - T(15)) + T(10));
    df = T(30) * t * t * (t * (t - T(2)) + T(1));
    ddf = T(60) * t * (t * (T(2) * t - T(3)) + T(1));
}
TW_FUNC int32_t wrap(int32_t c, int32_t period) {
    if (period <= 0) return c;  // not a period: this axis does not repeat (Warp requires > 0)
    const int32_t m = c % period;
    return m < 0 ? m + period : m;
}

// The noise at x (N coordinates), its gradient and, with Hess, its Hessian (symmetric, full).
// period: the N periods of pnoise, or null.
template <int N, typename T, bool Hess>
TW_FUNC T eval(uint32_t state, const T* x, const int32_t* period, T (&grad)[N], T (&hess)[N][N]) {
    int32_t base[N];
    T d[N], w[N][2], dw[N][2], ddw[N][2];
    for (int i = 0; i < N; ++i) {
        const T fl = floor(x[i]);
        base[i] = (int32_t)fl;
        d[i] = x[i] - fl;
        T f, df, ddf;
        fade(d[i], f, df, ddf);
        w[i][0] = T(1) - f, w[i][1] = f;
        dw[i][0] = -df, dw[i][1] = df;
        ddw[i][0] = -ddf, ddw[i][1] = ddf;
        grad[i] = T(0);
        for (int j = 0; j < N; ++j) hess[i][j] = T(0);
    }
    T value = T(0);
    for (int corner = 0; corner < (1 << N); ++corner) {
        int32_t c[N];
        int bit[N];
        T o[N];
        for (int i = 0; i < N; ++i) {
            bit[i] = (corner >> i) & 1;
            c[i] = period ? wrap(base[i] + bit[i], period[i]) : base[i] + bit[i];
            o[i] = d[i] - T(bit[i]);
        }
        float gf[N];
        lattice_gradient<N>(cell_hash<N>(state, c), gf);
        T g[N], lin = T(0);
        for (int i = 0; i < N; ++i) g[i] = T(gf[i]), lin += g[i] * o[i];
        // the corner's weight prod_i w_i and its partials (products over the other axes: a weight
        // may be 0, so never divided out)
        T W = T(1), Wd[N];
        for (int i = 0; i < N; ++i) W *= w[i][bit[i]];
        for (int j = 0; j < N; ++j) {
            Wd[j] = dw[j][bit[j]];
            for (int i = 0; i < N; ++i)
                if (i != j) Wd[j] *= w[i][bit[i]];
        }
        value += W * lin;
        for (int j = 0; j < N; ++j) grad[j] += Wd[j] * lin + W * g[j];
        if (Hess) {
            for (int j = 0; j < N; ++j)
                for (int k = j; k < N; ++k) {
                    T Wjk = j == k ? ddw[j][bit[j]] : dw[j][bit[j]] * dw[k][bit[k]];
                    for (int i = 0; i < N; ++i)
                        if (i != j && i != k) Wjk *= w[i][bit[i]];
                    hess[j][k] += Wjk * lin + Wd[j] * g[k] + Wd[k] * g[j];
                }
        }
    }
    if (Hess)
        for (int j = 0; j < N; ++j)
            for (int k = 0; k < j; ++k) hess[j][k] = hess[k][j];
    return value;
}

template <typename S> TW_FUNC uint32_t seed(S state) { return (uint32_t)state; }

// curlnoise: octave o samples at lac^o x with weight gain^o (Warp's convention: the potential's
// gradient at the scaled point, not scaled by the frequency), so the sum stays divergence-free.
template <int N> struct curl_dim { static constexpr int value = N == 2 ? 2 : 3; };  // the result's size
template <typename O> TW_FUNC uint32_t octave_count(O octaves) {
    return octaves > O(0) ? (uint32_t)octaves : 0u;  // a negative count (int argument) is none
}
// The three potentials of the 3D / 4D curl: independent fields derived from the state.
TW_FUNC uint32_t potential_state(uint32_t state, int k) { return rng::draw(state, (uint32_t)k + 1u); }

// The curl at p (one octave) and, with Jac, its Jacobian J[i][j] = d curl_i / d p_j.
// 2D: the rotated gradient (-dpsi/dy, dpsi/dx) of one potential; 3D/4D: curl (psi0, psi1, psi2)
// over the first three axes.
template <int N, typename T, bool Jac>
TW_FUNC void curl(uint32_t state, const T* p, T (&out)[curl_dim<N>::value], T (&jac)[curl_dim<N>::value][N]) {
    if constexpr (N == 2) {
        T g[2], h[2][2];
        eval<2, T, Jac>(state, p, nullptr, g, h);
        out[0] = -g[1], out[1] = g[0];
        if (Jac)
            for (int j = 0; j < 2; ++j) jac[0][j] = -h[1][j], jac[1][j] = h[0][j];
    } else {
        T g[3][N], h[3][N][N];
        for (int k = 0; k < 3; ++k) eval<N, T, Jac>(potential_state(state, k), p, nullptr, g[k], h[k]);
        out[0] = g[2][1] - g[1][2];
        out[1] = g[0][2] - g[2][0];
        out[2] = g[1][0] - g[0][1];
        if (Jac)
            for (int j = 0; j < N; ++j) {
                jac[0][j] = h[2][1][j] - h[1][2][j];
                jac[1][j] = h[0][2][j] - h[2][0][j];
                jac[2][j] = h[1][0][j] - h[0][1][j];
            }
    }
}
}  // namespace perlin

// ---- noise(state, x): x a float, vec2, vec3 or vec4 ---------------------------------------------
template <typename S, typename T, detail::enable_if_t<detail::is_float<T>::value, int> = 0>
TW_FUNC T noise(S state, T x) {
    T g[1], h[1][1];
    return perlin::eval<1, T, false>(perlin::seed(state), &x, nullptr, g, h);
}
template <typename S, int N, typename T> TW_FUNC T noise(S state, const vec_t<N, T>& x) {
    T g[N], h[N][N];
    return perlin::eval<N, T, false>(perlin::seed(state), x.c, nullptr, g, h);
}
template <typename S, typename T, detail::enable_if_t<detail::is_float<T>::value, int> = 0>
TW_FUNC void adj_noise(S state, T x, S&, T& adj_x, T adj_ret) {
    T g[1], h[1][1];
    perlin::eval<1, T, false>(perlin::seed(state), &x, nullptr, g, h);
    adj_x += adj_ret * g[0];
}
template <typename S, int N, typename T>
TW_FUNC void adj_noise(S state, const vec_t<N, T>& x, S&, vec_t<N, T>& adj_x, T adj_ret) {
    T g[N], h[N][N];
    perlin::eval<N, T, false>(perlin::seed(state), x.c, nullptr, g, h);
    for (int i = 0; i < N; ++i) adj_x.c[i] += adj_ret * g[i];
}

// ---- pnoise(state, x, px[, py[, pz[, pt]]]): one integer period per coordinate -----------------
namespace perlin {
template <int N, typename T> TW_FUNC T periodic(uint32_t state, const T* x, const int32_t* period) {
    T g[N], h[N][N];
    return eval<N, T, false>(state, x, period, g, h);
}
template <int N, typename T>
TW_FUNC void adj_periodic(uint32_t state, const T* x, const int32_t* period, T* adj_x, T adj_ret) {
    T g[N], h[N][N];
    eval<N, T, false>(state, x, period, g, h);
    for (int i = 0; i < N; ++i) adj_x[i] += adj_ret * g[i];
}
}  // namespace perlin

template <typename S, typename T, typename P0, detail::enable_if_t<detail::is_float<T>::value, int> = 0>
TW_FUNC T pnoise(S state, T x, P0 px) {
    const int32_t p[1] = {(int32_t)px};
    return perlin::periodic<1, T>(perlin::seed(state), &x, p);
}
template <typename S, typename T, typename P0, typename P1>
TW_FUNC T pnoise(S state, const vec_t<2, T>& x, P0 px, P1 py) {
    const int32_t p[2] = {(int32_t)px, (int32_t)py};
    return perlin::periodic<2, T>(perlin::seed(state), x.c, p);
}
template <typename S, typename T, typename P0, typename P1, typename P2>
TW_FUNC T pnoise(S state, const vec_t<3, T>& x, P0 px, P1 py, P2 pz) {
    const int32_t p[3] = {(int32_t)px, (int32_t)py, (int32_t)pz};
    return perlin::periodic<3, T>(perlin::seed(state), x.c, p);
}
template <typename S, typename T, typename P0, typename P1, typename P2, typename P3>
TW_FUNC T pnoise(S state, const vec_t<4, T>& x, P0 px, P1 py, P2 pz, P3 pt) {
    const int32_t p[4] = {(int32_t)px, (int32_t)py, (int32_t)pz, (int32_t)pt};
    return perlin::periodic<4, T>(perlin::seed(state), x.c, p);
}
// the periods (integers) and the state get no gradient
template <typename S, typename T, typename P0, detail::enable_if_t<detail::is_float<T>::value, int> = 0>
TW_FUNC void adj_pnoise(S state, T x, P0 px, S&, T& adj_x, P0&, T adj_ret) {
    const int32_t p[1] = {(int32_t)px};
    perlin::adj_periodic<1, T>(perlin::seed(state), &x, p, &adj_x, adj_ret);
}
template <typename S, typename T, typename P0, typename P1>
TW_FUNC void adj_pnoise(S state, const vec_t<2, T>& x, P0 px, P1 py, S&, vec_t<2, T>& adj_x, P0&, P1&,
                        T adj_ret) {
    const int32_t p[2] = {(int32_t)px, (int32_t)py};
    perlin::adj_periodic<2, T>(perlin::seed(state), x.c, p, adj_x.c, adj_ret);
}
template <typename S, typename T, typename P0, typename P1, typename P2>
TW_FUNC void adj_pnoise(S state, const vec_t<3, T>& x, P0 px, P1 py, P2 pz, S&, vec_t<3, T>& adj_x, P0&, P1&,
                        P2&, T adj_ret) {
    const int32_t p[3] = {(int32_t)px, (int32_t)py, (int32_t)pz};
    perlin::adj_periodic<3, T>(perlin::seed(state), x.c, p, adj_x.c, adj_ret);
}
template <typename S, typename T, typename P0, typename P1, typename P2, typename P3>
TW_FUNC void adj_pnoise(S state, const vec_t<4, T>& x, P0 px, P1 py, P2 pz, P3 pt, S&, vec_t<4, T>& adj_x,
                        P0&, P1&, P2&, P3&, T adj_ret) {
    const int32_t p[4] = {(int32_t)px, (int32_t)py, (int32_t)pz, (int32_t)pt};
    perlin::adj_periodic<4, T>(perlin::seed(state), x.c, p, adj_x.c, adj_ret);
}

// ---- curlnoise(state, x, octaves=1, lacunarity=2.0, gain=0.5): x a vec2 (-> vec2), vec3 or vec4
// (-> vec3) --------------------------------------------------------------------------------------
template <typename S, int N, typename T, typename O = uint32_t, typename L = float, typename G = float>
TW_FUNC vec_t<perlin::curl_dim<N>::value, T> curlnoise(S state, const vec_t<N, T>& x, O octaves = O(1),
                                                       L lacunarity = L(2), G gain = G(0.5)) {
    constexpr int M = perlin::curl_dim<N>::value;
    vec_t<M, T> r;
    T amp = T(1), freq = T(1), p[N], c[M], jac[M][N];
    const uint32_t n = perlin::octave_count(octaves);
    for (uint32_t o = 0; o < n; ++o) {
        for (int i = 0; i < N; ++i) p[i] = x.c[i] * freq;
        perlin::curl<N, T, false>(perlin::seed(state), p, c, jac);
        for (int i = 0; i < M; ++i) r.c[i] += amp * c[i];
        amp *= T(gain);
        freq *= T(lacunarity);
    }
    return r;
}
// d curl(freq x) / dx = freq J(freq x): the Hessians of the potentials. The octave parameters get
// no gradient (as in Warp).
template <typename S, int N, typename T, typename O, typename L, typename G>
TW_FUNC void adj_curlnoise(S state, const vec_t<N, T>& x, O octaves, L lacunarity, G gain, S&, vec_t<N, T>& adj_x,
                           O&, L&, G&, const vec_t<perlin::curl_dim<N>::value, T>& adj_ret) {
    constexpr int M = perlin::curl_dim<N>::value;
    T amp = T(1), freq = T(1), p[N], c[M], jac[M][N];
    const uint32_t n = perlin::octave_count(octaves);
    for (uint32_t o = 0; o < n; ++o) {
        for (int i = 0; i < N; ++i) p[i] = x.c[i] * freq;
        perlin::curl<N, T, true>(perlin::seed(state), p, c, jac);
        for (int j = 0; j < N; ++j) {
            T s = T(0);
            for (int i = 0; i < M; ++i) s += adj_ret.c[i] * jac[i][j];
            adj_x.c[j] += amp * freq * s;
        }
        amp *= T(gain);
        freq *= T(lacunarity);
    }
}
template <typename S, int N, typename T, typename O, typename L>
TW_FUNC void adj_curlnoise(S state, const vec_t<N, T>& x, O octaves, L lacunarity, S& adj_state,
                           vec_t<N, T>& adj_x, O& adj_octaves, L& adj_lacunarity,
                           const vec_t<perlin::curl_dim<N>::value, T>& adj_ret) {
    float gain = 0.5f, adj_gain = 0.0f;
    adj_curlnoise(state, x, octaves, lacunarity, gain, adj_state, adj_x, adj_octaves, adj_lacunarity, adj_gain,
                  adj_ret);
}
template <typename S, int N, typename T, typename O>
TW_FUNC void adj_curlnoise(S state, const vec_t<N, T>& x, O octaves, S& adj_state, vec_t<N, T>& adj_x,
                           O& adj_octaves, const vec_t<perlin::curl_dim<N>::value, T>& adj_ret) {
    float lacunarity = 2.0f, adj_lacunarity = 0.0f;
    adj_curlnoise(state, x, octaves, lacunarity, adj_state, adj_x, adj_octaves, adj_lacunarity, adj_ret);
}
template <typename S, int N, typename T>
TW_FUNC void adj_curlnoise(S state, const vec_t<N, T>& x, S& adj_state, vec_t<N, T>& adj_x,
                           const vec_t<perlin::curl_dim<N>::value, T>& adj_ret) {
    uint32_t octaves = 1u, adj_octaves = 0u;
    adj_curlnoise(state, x, octaves, adj_state, adj_x, adj_octaves, adj_ret);
}
}  // namespace tw
