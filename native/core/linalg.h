// Small dense linear algebra: svd3, svd2, qr3, eig3, inverse_approx, each followed
// by its adjoint (docs/AUTODIFF.md; a tuple result's adjoint arrives as one tuple_t).
//
// svd3 / qr3 / eig3 follow McAdams et al., "Computing the Singular Value Decomposition of 3x3
// matrices with minimal branching and elementary floating point operations" (UW-Madison TR1690,
// 2011) step for step, as Warp runs it: a fixed number of cyclic Jacobi sweeps with approximate
// Givens quaternions on A^T A, a sort of B = A V by column norm with sign-flipping swaps (V stays a
// rotation), then a Givens QR of B. So the factors themselves, not only their products, agree with
// Warp's: U and V are rotations, sigma is sorted by decreasing magnitude, and sigma[2] carries the
// sign of det(A). Everything uses 1 / sqrt (no rsqrt intrinsic), so CPU and CUDA agree.
#pragma once
#include "mat.h"
#include "tuple.h"

namespace tw {
namespace linalg {
// Sweeps and the QR / SVD-adjoint epsilon per precision (float and half: 4 sweeps, as Warp).
template <typename T> struct config {
    static constexpr int sweeps = 4;
    static TW_FUNC T eps() { return cast<T>(1e-6f); }
};
template <> struct config<double> {
    static constexpr int sweeps = 8;
    static TW_FUNC double eps() { return 1e-12; }
};

template <typename T> TW_FUNC T rsqrt(T x) { return detail::one<T>() / sqrt(x); }

// Approximate Givens quaternion (ch, sh) for the 2x2 block [[a11, a12], [a12, a22]]; a fixed
// pi/8 rotation when the exact angle would be too large for the approximation.
template <typename T> TW_FUNC void approx_givens(T a11, T a12, T a22, T& ch, T& sh) {
    const T four_gamma_sq = cast<T>(5.82842712474619), cos_pi8 = cast<T>(0.9238795325112867),
            sin_pi8 = cast<T>(0.3826834323650898);
    ch = cast<T>(2) * (a11 - a22);
    sh = a12;
    bool small_angle = four_gamma_sq * sh * sh < ch * ch;
    T w = rsqrt(ch * ch + sh * sh);
    ch = small_angle ? w * ch : cos_pi8;
    sh = small_angle ? w * sh : sin_pi8;
}

// One Jacobi rotation of the symmetric s = (s11, s21, s22, s31, s32, s33) in its (1, 2) plane,
// accumulated into the quaternion q = (x, y, z, w) as a rotation about axis `z`; then the axes are
// relabelled (1, 2, 3) -> (3, 1, 2), so three calls visit the planes (1,2), (2,3), (1,3).
template <typename T> TW_FUNC void jacobi_step(T (&s)[6], T (&q)[4], int x, int y, int z) {
    T ch, sh;
    approx_givens(s[0], s[1], s[2], ch, sh);
    const T scale = ch * ch + sh * sh;
    const T a = (ch * ch - sh * sh) / scale, b = (cast<T>(2) * sh * ch) / scale;
    const T s11 = s[0], s21 = s[1], s22 = s[2], s31 = s[3], s32 = s[4], s33 = s[5];
    const T r11 = a * (a * s11 + b * s21) + b * (a * s21 + b * s22);
    const T r21 = a * (-b * s11 + a * s21) + b * (-b * s21 + a * s22);
    const T r22 = -b * (-b * s11 + a * s21) + a * (-b * s21 + a * s22);
    const T r31 = a * s31 + b * s32, r32 = -b * s31 + a * s32;
    s[0] = r22, s[1] = r32, s[2] = s33, s[3] = r21, s[4] = r31, s[5] = r11;
    const T t[3] = {q[0] * sh, q[1] * sh, q[2] * sh};
    const T wsh = sh * q[3];
    for (int i = 0; i < 4; ++i) q[i] *= ch;
    q[z] += wsh;
    q[3] -= t[z];
    q[x] += t[y];
    q[y] -= t[x];
}

// The rotation diagonalising the symmetric s (approximately: a fixed number of sweeps).
template <typename T> TW_FUNC void jacobi_eigen(T (&s)[6], T (&q)[4]) {
    q[0] = q[1] = q[2] = detail::zero<T>();
    q[3] = detail::one<T>();
    for (int sweep = 0; sweep < config<T>::sweeps; ++sweep) {
        jacobi_step(s, q, 0, 1, 2);
        jacobi_step(s, q, 1, 2, 0);
        jacobi_step(s, q, 2, 0, 1);
    }
}

// Rotation matrix of a unit quaternion (x, y, z, w).
template <typename T> TW_FUNC mat_t<3, 3, T> rotation(const T (&q)[4]) {
    const T x = q[0], y = q[1], z = q[2], w = q[3], one = detail::one<T>(), two = cast<T>(2);
    return mat_t<3, 3, T>(one - two * (y * y + z * z), two * (x * y - w * z), two * (x * z + w * y),
                          two * (x * y + w * z), one - two * (x * x + z * z), two * (y * z - w * x),
                          two * (x * z - w * y), two * (y * z + w * x), one - two * (x * x + y * y));
}

// Columns i and j of b and v become (col j, -col i) when col j of b is longer: a rotation by 90
// degrees, so v stays a rotation while the columns get sorted.
template <typename T>
TW_FUNC void sort_columns(mat_t<3, 3, T>& b, mat_t<3, 3, T>& v, T (&rho)[3], int i, int j) {
    if (!(rho[i] < rho[j])) return;
    for (int r = 0; r < 3; ++r) {
        T bi = b.c[r][i], vi = v.c[r][i];
        b.c[r][i] = b.c[r][j], b.c[r][j] = -bi;
        v.c[r][i] = v.c[r][j], v.c[r][j] = -vi;
    }
    T t = rho[i];
    rho[i] = rho[j], rho[j] = t;
}

// Givens rotation (as a half-angle pair) zeroing a2 against the pivot a1.
template <typename T> TW_FUNC void qr_givens(T a1, T a2, T& ch, T& sh) {
    const T eps = config<T>::eps();
    T rho = sqrt(a1 * a1 + a2 * a2);
    sh = rho > eps ? a2 : detail::zero<T>();
    ch = abs(a1) + max(rho, eps);
    if (a1 < detail::zero<T>()) {
        T t = sh;
        sh = ch, ch = t;
    }
    T w = rsqrt(ch * ch + sh * sh);
    ch *= w;
    sh *= w;
}

// r <- G^T r on rows (i, j) and q <- q G on columns (i, j), G the rotation zeroing r[j][i].
template <typename T> TW_FUNC void qr_step(mat_t<3, 3, T>& r, mat_t<3, 3, T>& q, int i, int j) {
    T ch, sh;
    qr_givens(r.c[i][i], r.c[j][i], ch, sh);
    const T a = detail::one<T>() - cast<T>(2) * sh * sh, b = cast<T>(2) * ch * sh;
    for (int k = 0; k < 3; ++k) {
        T ri = r.c[i][k], rj = r.c[j][k];
        r.c[i][k] = a * ri + b * rj, r.c[j][k] = -b * ri + a * rj;
        T qi = q.c[k][i], qj = q.c[k][j];
        q.c[k][i] = a * qi + b * qj, q.c[k][j] = -b * qi + a * qj;
    }
}

template <typename T> TW_FUNC void qr(const mat_t<3, 3, T>& a, mat_t<3, 3, T>& q, mat_t<3, 3, T>& r) {
    r = a;
    q = identity<3, T>();
    qr_step(r, q, 0, 1);
    qr_step(r, q, 0, 2);
    qr_step(r, q, 1, 2);
}

template <typename T> TW_FUNC void symmetric_lower(const mat_t<3, 3, T>& a, T (&s)[6]) {
    s[0] = a.c[0][0], s[1] = a.c[1][0], s[2] = a.c[1][1];
    s[3] = a.c[2][0], s[4] = a.c[2][1], s[5] = a.c[2][2];
}
}  // namespace linalg

template <typename T> using svd3_t = tuple_t<mat_t<3, 3, T>, vec_t<3, T>, mat_t<3, 3, T>>;
template <typename T> using svd2_t = tuple_t<mat_t<2, 2, T>, vec_t<2, T>, mat_t<2, 2, T>>;

// A = U diag(sigma) V^T.
template <typename T> TW_FUNC svd3_t<T> svd3(const mat_t<3, 3, T>& a) {
    T s[6], q[4], rho[3];
    linalg::symmetric_lower(mul(transpose(a), a), s);
    linalg::jacobi_eigen(s, q);
    mat_t<3, 3, T> v = linalg::rotation(q), b = mul(a, v), u, r;
    for (int j = 0; j < 3; ++j)
        rho[j] = b.c[0][j] * b.c[0][j] + b.c[1][j] * b.c[1][j] + b.c[2][j] * b.c[2][j];
    linalg::sort_columns(b, v, rho, 0, 1);
    linalg::sort_columns(b, v, rho, 0, 2);
    linalg::sort_columns(b, v, rho, 1, 2);
    linalg::qr(b, u, r);
    return make_tuple<mat_t<3, 3, T>, vec_t<3, T>, mat_t<3, 3, T>>(u, get_diag(r), v);
}

// Closed form from the eigenpairs of A^T A: sigma >= 0 sorted, V a rotation, U completed so that
// det(U) is the sign of det(A).
template <typename T> TW_FUNC svd2_t<T> svd2(const mat_t<2, 2, T>& a) {
    const T zero = detail::zero<T>(), one = detail::one<T>(), half = cast<T>(0.5), two = cast<T>(2);
    const T a11 = a.c[0][0], a12 = a.c[0][1], a21 = a.c[1][0], a22 = a.c[1][1];
    const T p = a11 * a11 + a21 * a21, q = a11 * a12 + a21 * a22, r = a12 * a12 + a22 * a22;
    const T tr = p + r, diff = p - r, disc = diff * diff + cast<T>(4) * q * q;
    if (disc == zero) {
        // A^T A = s^2 I, so A = s U for an orthogonal U and V = I. (Warp returns U = V = I here,
        // which does not reconstruct A unless A = sI: a rotation or a reflection, say.)
        T s = sqrt(half * tr);
        mat_t<2, 2, T> id = identity<2, T>(), u = s == zero ? id : mul(a, one / s);
        return make_tuple<mat_t<2, 2, T>, vec_t<2, T>, mat_t<2, 2, T>>(u, vec_t<2, T>(s, s), id);
    }
    const T root = sqrt(disc);
    // tr - root may round below zero for a singular A, where Warp's sigma[1] is NaN: clamped to 0
    const T inv_s1 = linalg::rsqrt((tr + root) * half), s1 = one / inv_s1;
    const T s2 = sqrt(max((tr - root) * half, zero));
    // the difference of two parallel eigenvectors of the larger eigenvalue,
    // (diff + root, 2q) and (2q, root - diff)
    const T vx = diff + root - two * q, vy = diff - root + two * q, len_sq = vx * vx + vy * vy;
    T v11 = cast<T>(0.707106781186547524401), v21 = v11;
    if (len_sq != zero) {
        T k = linalg::rsqrt(len_sq);
        v11 = vx * k, v21 = vy * k;
    }
    const T u11 = (a11 * v11 + a12 * v21) * inv_s1, u21 = (a21 * v11 + a22 * v21) * inv_s1;
    const T det_sign = sign(a11 * a22 - a12 * a21);  // sign(0) == 1
    return make_tuple<mat_t<2, 2, T>, vec_t<2, T>, mat_t<2, 2, T>>(
        mat_t<2, 2, T>(u11, -u21 * det_sign, u21, u11 * det_sign), vec_t<2, T>(s1, s2),
        mat_t<2, 2, T>(v11, -v21, v21, v11));
}

// A = Q R with Q a rotation and R upper triangular (its last diagonal entry may be negative).
template <typename T> TW_FUNC tuple_t<mat_t<3, 3, T>, mat_t<3, 3, T>> qr3(const mat_t<3, 3, T>& a) {
    mat_t<3, 3, T> q, r;
    linalg::qr(a, q, r);
    return make_tuple<mat_t<3, 3, T>, mat_t<3, 3, T>>(q, r);
}

// Symmetric A (its lower triangle is read) = Q diag(d) Q^T, Q a rotation; d unordered.
template <typename T> TW_FUNC tuple_t<mat_t<3, 3, T>, vec_t<3, T>> eig3(const mat_t<3, 3, T>& a) {
    T s[6], q[4];
    linalg::symmetric_lower(a, s);
    linalg::jacobi_eigen(s, q);
    mat_t<3, 3, T> m = linalg::rotation(q);
    return make_tuple<mat_t<3, 3, T>, vec_t<3, T>>(m, get_diag(mul(mul(transpose(m), a), m)));
}

// Warp's GPU version trades accuracy for speed; here both targets compute the exact inverse.
template <int N, typename T> TW_FUNC mat_t<N, N, T> inverse_approx(const mat_t<N, N, T>& m) {
    return inverse(m);
}

}  // namespace tw

// ---------------------------------------------------------------------------------------
// Adjoints. The factorisations are recomputed from A (the primal result is not passed).
namespace tw {
namespace linalg {
template <int N, typename T> TW_FUNC void acc(mat_t<N, N, T>& into, const mat_t<N, N, T>& g) {
    for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j) into.c[i][j] += g.c[i][j];
}
template <int N, typename T>
TW_FUNC mat_t<N, N, T> hadamard(const mat_t<N, N, T>& a, const mat_t<N, N, T>& b) {
    mat_t<N, N, T> r;
    for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j) r.c[i][j] = a.c[i][j] * b.c[i][j];
    return r;
}
// M^T G - G^T M (antisymmetric)
template <int N, typename T>
TW_FUNC mat_t<N, N, T> skew_part(const mat_t<N, N, T>& m, const mat_t<N, N, T>& g) {
    return sub(mul(transpose(m), g), mul(transpose(g), m));
}

// The standard SVD backward pass for square A = U S V^T: with F_ij = 1 / (s_j^2 - s_i^2),
// dA = U [(F o (U^T gU - gU^T U)) S + diag(gs) + S (F o (V^T gV - gV^T V))] V^T. Sigma is sorted
// by decreasing magnitude, so s_j^2 - s_i^2 <= 0 for i < j; it is held at or below -eps, so
// repeated singular values (where singular vectors are not unique) give large finite values, as Warp.
template <int N, typename T>
TW_FUNC mat_t<N, N, T> svd_backward(const mat_t<N, N, T>& u, const vec_t<N, T>& s, const mat_t<N, N, T>& v,
                                    const mat_t<N, N, T>& gu, const vec_t<N, T>& gs,
                                    const mat_t<N, N, T>& gv) {
    mat_t<N, N, T> f;
    for (int i = 0; i < N; ++i)
        for (int j = i + 1; j < N; ++j) {
            T k = detail::one<T>() / min(s.c[j] * s.c[j] - s.c[i] * s.c[i], -config<T>::eps());
            f.c[i][j] = k, f.c[j][i] = -k;
        }
    mat_t<N, N, T> sm = diag(s);
    mat_t<N, N, T> inner = add(add(mul(hadamard(f, skew_part(u, gu)), sm), diag(gs)),
                               mul(sm, hadamard(f, skew_part(v, gv))));
    return mul(mul(u, inner), transpose(v));
}
}  // namespace linalg

template <typename T>
TW_FUNC void adj_svd3(const mat_t<3, 3, T>& a, mat_t<3, 3, T>& adj_a, const svd3_t<T>& adj_ret) {
    svd3_t<T> r = svd3(a);
    linalg::acc(adj_a, linalg::svd_backward(get<0>(r), get<1>(r), get<2>(r), get<0>(adj_ret), get<1>(adj_ret),
                                            get<2>(adj_ret)));
}
template <typename T>
TW_FUNC void adj_svd2(const mat_t<2, 2, T>& a, mat_t<2, 2, T>& adj_a, const svd2_t<T>& adj_ret) {
    svd2_t<T> r = svd2(a);
    linalg::acc(adj_a, linalg::svd_backward(get<0>(r), get<1>(r), get<2>(r), get<0>(adj_ret), get<1>(adj_ret),
                                            get<2>(adj_ret)));
}

// Walter & Lehmann's QR backward pass (as in arXiv:2009.10071, eq. 3), A of full rank:
// M = R gR^T - gQ^T Q; dA = (gQ + Q copyltu(M)) R^-T, copyltu mirroring the lower triangle up.
template <typename T>
TW_FUNC void adj_qr3(const mat_t<3, 3, T>& a, mat_t<3, 3, T>& adj_a,
                     const tuple_t<mat_t<3, 3, T>, mat_t<3, 3, T>>& adj_ret) {
    mat_t<3, 3, T> q, r;
    linalg::qr(a, q, r);
    const mat_t<3, 3, T>& gq = get<0>(adj_ret);
    mat_t<3, 3, T> m = sub(mul(r, transpose(get<1>(adj_ret))), mul(transpose(gq), q));
    for (int i = 0; i < 3; ++i)
        for (int j = i + 1; j < 3; ++j) m.c[i][j] = m.c[j][i];
    linalg::acc(adj_a, mul(add(gq, mul(q, m)), inverse(transpose(r))));
}

// Giles' eigendecomposition backward pass (NA-08-01, p. 10): dA = Q (diag(gd) + F o (Q^T gQ)) Q^T
// with F_ij = 1 / (d_j - d_i). Gaps below 1e-6 in magnitude are widened to 1e-6 (keeping their
// sign; an exact tie counts as positive), so repeated eigenvalues give large finite values where
// the eigenvectors are not unique. Losses of the eigenvalues alone are exact there (F o 0 = 0).
template <typename T>
TW_FUNC void adj_eig3(const mat_t<3, 3, T>& a, mat_t<3, 3, T>& adj_a,
                      const tuple_t<mat_t<3, 3, T>, vec_t<3, T>>& adj_ret) {
    tuple_t<mat_t<3, 3, T>, vec_t<3, T>> r = eig3(a);
    const mat_t<3, 3, T>& q = get<0>(r);
    const vec_t<3, T>& d = get<1>(r);
    const T gap = cast<T>(1e-6);
    mat_t<3, 3, T> f;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            if (i == j) continue;
            T g = d.c[j] - d.c[i];
            if (g == detail::zero<T>()) g = i < j ? gap : -gap;  // a tie: F stays antisymmetric
            else if (g < detail::zero<T>() && g > -gap) g = -gap;
            else if (g > detail::zero<T>() && g < gap) g = gap;
            f.c[i][j] = detail::one<T>() / g;
        }
    mat_t<3, 3, T> inner =
        add(diag(get<1>(adj_ret)), linalg::hadamard(f, mul(transpose(q), get<0>(adj_ret))));
    linalg::acc(adj_a, mul(mul(q, inner), transpose(q)));
}

// d(A^-1) = -A^-1 dA A^-1, so dA = -R^T gR R^T with R = A^-1.
template <int N, typename T>
TW_FUNC void adj_inverse_approx(const mat_t<N, N, T>& m, mat_t<N, N, T>& adj_m,
                                const mat_t<N, N, T>& adj_ret) {
    mat_t<N, N, T> rt = transpose(inverse_approx(m));
    linalg::acc(adj_m, neg(mul(mul(rt, adj_ret), rt)));
}
}  // namespace tw
