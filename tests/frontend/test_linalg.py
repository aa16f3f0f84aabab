"""svd3, svd2, qr3, eig3, inverse_approx, argmin/argmax, differential against Warp on CPU.

The factorisations run Warp's algorithm, so the factors themselves (not only their products) are
compared with Warp's, in float32 and float64, on random general, symmetric, rank-deficient,
negative-determinant and diagonal matrices; numpy checks the conventions (reconstruction, U and V
rotations, sorted singular values, the sign of sigma[2]). Both call forms are covered: tuple results
and Warp's output arguments (``wp.svd3(A, U, sigma, V)``), also inside loops, branches and funcs.
"""

import numpy as np
import pytest
from conftest import Arr, check_located, launch_both, load_both

import tilewarp as wp
from tilewarp import KernelError, KernelTypeError

TOKENS = {"f32": {"_M33_": "wp.mat33", "_M22_": "wp.mat22", "_V3_": "wp.vec3", "_V2_": "wp.vec2",
                  "_M44_": "wp.mat44", "_SFX_": "f32"},
          "f64": {"_M33_": "wp.mat33d", "_M22_": "wp.mat22d", "_V3_": "wp.vec3d", "_V2_": "wp.vec2d",
                  "_M44_": "wp.mat44d", "_SFX_": "f64"}}

TYPED = '''
@wp.kernel
def tuple_forms__SFX_(a: wp.array(dtype=_M33_), b: wp.array(dtype=_M22_), m33: wp.array(dtype=_M33_, ndim=2),
                      v3: wp.array(dtype=_V3_, ndim=2), m22: wp.array(dtype=_M22_, ndim=2),
                      v2: wp.array(dtype=_V2_)):
    i = wp.tid()
    U, sigma, V = wp.svd3(a[i])
    m33[i, 0] = U
    v3[i, 0] = sigma
    m33[i, 1] = V
    Q, R = wp.qr3(a[i])
    m33[i, 2] = Q
    m33[i, 3] = R
    S = a[i] + wp.transpose(a[i])
    E, d = wp.eig3(S)
    m33[i, 4] = E
    v3[i, 1] = d
    U2, s2, V2 = wp.svd2(b[i])
    m22[i, 0] = U2
    v2[i] = s2
    m22[i, 1] = V2


@wp.kernel
def output_forms__SFX_(a: wp.array(dtype=_M33_), b: wp.array(dtype=_M22_), m33: wp.array(dtype=_M33_, ndim=2),
                       v3: wp.array(dtype=_V3_, ndim=2), m22: wp.array(dtype=_M22_, ndim=2),
                       v2: wp.array(dtype=_V2_)):
    i = wp.tid()
    U = _M33_()
    sigma = _V3_()
    V = _M33_()
    wp.svd3(a[i], U, sigma, V)
    m33[i, 0] = U
    v3[i, 0] = sigma
    m33[i, 1] = V
    Q = _M33_()
    R = _M33_()
    wp.qr3(a[i], Q, R)
    m33[i, 2] = Q
    m33[i, 3] = R
    E = _M33_()
    d = _V3_()
    wp.eig3(a[i] + wp.transpose(a[i]), E, d)
    m33[i, 4] = E
    v3[i, 1] = d
    U2 = _M22_()
    s2 = _V2_()
    V2 = _M22_()
    wp.svd2(b[i], U2, s2, V2)
    m22[i, 0] = U2
    v2[i] = s2
    m22[i, 1] = V2


@wp.kernel
def approx__SFX_(a: wp.array(dtype=_M33_), b: wp.array(dtype=_M22_), c: wp.array(dtype=_M44_),
                 out3: wp.array(dtype=_M33_), out2: wp.array(dtype=_M22_), out4: wp.array(dtype=_M44_)):
    i = wp.tid()
    out3[i] = wp.inverse_approx(a[i])
    out2[i] = wp.inverse_approx(b[i])
    out4[i] = wp.inverse_approx(c[i])
'''

SRC = '''
import WP as wp


@wp.func
def polar(a: wp.mat33):
    U = wp.mat33()
    s = wp.vec3()
    V = wp.mat33()
    wp.svd3(a, U, s, V)
    return U * wp.transpose(V), s


@wp.kernel
def control_flow(a: wp.array(dtype=wp.mat33), flag: wp.array(dtype=int),
                 out: wp.array(dtype=wp.mat33, ndim=2), sv: wp.array(dtype=wp.vec3, ndim=2)):
    i = wp.tid()
    U = wp.mat33()
    s = wp.vec3()
    V = wp.mat33()
    m = a[i]
    for k in range(3):  # U, s and V are carried by the loop
        wp.svd3(m, U, s, V)
        m = m * 0.5 + U * wp.transpose(V)
    out[i, 0] = m
    sv[i, 0] = s
    if flag[i] > 0:  # ... and merged by the branch
        wp.svd3(a[i] * 2.0, U, s, V)
    out[i, 1] = U
    sv[i, 1] = s
    r, s3 = polar(a[i])
    out[i, 2] = r
    sv[i, 2] = s3


@wp.kernel
def arg_extremes(v: wp.array(dtype=wp.vec4), vi: wp.array(dtype=wp.vec3i), vd: wp.array(dtype=wp.vec2d),
                 out: wp.array(dtype=wp.uint32, ndim=2)):
    i = wp.tid()
    out[i, 0] = wp.argmin(v[i])
    out[i, 1] = wp.argmax(v[i])
    out[i, 2] = wp.argmin(vi[i])
    out[i, 3] = wp.argmax(vi[i])
    out[i, 4] = wp.argmin(vd[i])
    out[i, 5] = wp.argmax(vd[i])
'''


def _source():
    out = SRC
    for tokens in TOKENS.values():
        text = TYPED
        for token, name in tokens.items():
            text = text.replace(token, name)
        out += text
    return out


@pytest.fixture(scope="module")
def mods():
    return load_both(_source())


NP = {"f32": np.float32, "f64": np.float64}
SFX = {"f32": "", "f64": "d"}
TOL = {"f32": dict(rtol=2e-5, atol=2e-5), "f64": dict(rtol=1e-11, atol=1e-11)}


def _matrices(rng, n, size, singular=False):
    """Random matrices, an eighth of them diagonal (any signs); or singular ones (dependent columns)."""
    a = rng.uniform(-2, 2, (n, size, size))
    if singular:
        a[:, :, 0] = a[:, :, 1] * rng.uniform(-2, 2, (n, 1))
        return a
    k = n // 8
    a[:k] = np.einsum("ni,ij->nij", rng.uniform(-2, 2, (k, size)), np.eye(size))
    return a


def _inputs(rng, key, n, singular=False):
    dt, sfx = NP[key], SFX[key]
    return [Arr(_matrices(rng, n, 3, singular).astype(dt), f"mat33{sfx}"),
            Arr(_matrices(rng, n, 2, singular).astype(dt), f"mat22{sfx}"),
            Arr(np.zeros((n, 5, 3, 3), dt), f"mat33{sfx}"), Arr(np.zeros((n, 2, 3), dt), f"vec3{sfx}"),
            Arr(np.zeros((n, 2, 2, 2), dt), f"mat22{sfx}"), Arr(np.zeros((n, 2), dt), f"vec2{sfx}")]


def _check_conventions(a, b, m33, v3, m22, v2, atol):
    """What Warp documents, checked in float64 numpy: A = U S V^T etc."""
    eye3 = np.broadcast_to(np.eye(3), a.shape)
    U, s, V = m33[:, 0], v3[:, 0], m33[:, 1]
    np.testing.assert_allclose(np.einsum("nij,nj,nkj->nik", U, s, V), a, atol=atol)
    for R in (U, V, m33[:, 2], m33[:, 4]):
        np.testing.assert_allclose(np.einsum("nji,njk->nik", R, R), eye3, atol=atol)
        np.testing.assert_allclose(np.linalg.det(R), 1, atol=atol)
    assert np.all(np.abs(s[:, :-1]) >= np.abs(s[:, 1:]) - atol) and np.all(s[:, :2] >= -atol)
    det = np.linalg.det(a)
    big = np.abs(det) > 1e-3
    assert np.all(np.sign(s[big, 2]) == np.sign(det[big]))
    Q, R = m33[:, 2], m33[:, 3]
    np.testing.assert_allclose(Q @ R, a, atol=atol)
    np.testing.assert_allclose(np.tril(R, -1), 0, atol=atol)
    S, E, d = a + np.swapaxes(a, 1, 2), m33[:, 4], v3[:, 1]
    np.testing.assert_allclose(np.einsum("nij,nj,nkj->nik", E, d, E), S, atol=atol * 10)
    U2, s2, V2 = m22[:, 0], v2, m22[:, 1]
    np.testing.assert_allclose(np.einsum("nij,nj,nkj->nik", U2, s2, V2), b, atol=atol)
    assert np.all(s2[:, 0] >= s2[:, 1] - atol) and np.all(s2 >= -atol)


@pytest.mark.parametrize("form", ["tuple_forms", "output_forms"])
@pytest.mark.parametrize("key", ["f32", "f64"])
def test_factorisations(mods, device, rng, key, form):
    n = 96
    args = _inputs(rng, key, n)
    got = launch_both(mods, f"{form}_{key}", n, args, device, **TOL[key])
    a, b = (x.data.astype(np.float64) for x in args[:2])
    _check_conventions(a, b, *(g.astype(np.float64) for g in got[2:]), atol=2e-3 if key == "f32" else 1e-9)


@pytest.mark.parametrize("key", ["f32", "f64"])
def test_singular_matrices(mods, rng, key):
    """Singular vectors of a zero singular value are not unique (rounding picks them), so only the
    singular values are compared with Warp's; the factors must still satisfy every convention.
    (Warp's svd2 gives NaN for sigma[1] when A^T A's smaller eigenvalue rounds below zero; 0 here.)"""
    n = 64
    args = _inputs(rng, key, n, singular=True)
    from conftest import need_warp, run

    need_warp(mods)
    got, want = (run(m, f"tuple_forms_{key}", n, args, "cpu") for m in mods)
    tol = dict(rtol=1e-4, atol=1e-4) if key == "f32" else dict(rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got[3][:, 0], want[3][:, 0], **tol)
    finite = np.isfinite(want[5]).all(1)
    np.testing.assert_allclose(got[5][finite, 0], want[5][finite, 0], **tol)
    # the zero singular value of a singular 2x2 is the root of a rounding error: zero to sqrt(eps)
    np.testing.assert_allclose(got[5][finite, 1], want[5][finite, 1], atol=3e-3 if key == "f32" else 1e-7)
    assert np.isfinite(got[5]).all()
    a, b = (x.data.astype(np.float64) for x in args[:2])
    # a fixed number of Jacobi sweeps, and a zero singular value known to sqrt(eps): looser products
    _check_conventions(a, b, *(g.astype(np.float64) for g in got[2:]), atol=2e-2 if key == "f32" else 1e-7)


def test_forms_agree(mods, rng):
    """The tuple and output-argument forms are the same computation."""
    n = 32
    args = _inputs(rng, "f32", n)
    from conftest import run

    # the same operations; the compiler may contract multiply-adds differently in the two kernels
    np.testing.assert_allclose(np.concatenate([x.ravel() for x in run(mods[0], "tuple_forms_f32", n, args, "cpu")]),
                               np.concatenate([x.ravel() for x in run(mods[0], "output_forms_f32", n, args, "cpu")]),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("key", ["f32", "f64"])
def test_special_matrices(mods, key):
    """Identity, zero, permutations, repeated and zero singular values. Where the singular values
    are distinct the factors match Warp's; where they repeat, the singular vectors are not unique
    (the last bit of rounding picks them) and only the values and the conventions are compared."""
    a = np.array([np.eye(3), np.zeros((3, 3)), np.eye(3)[[1, 2, 0]], np.eye(3)[[1, 0, 2]],
                  np.diag([2.0, 2, -2]), np.diag([1.0, 3, 2]), np.ones((3, 3)), np.diag([0.0, 0, 1]),
                  np.diag([-1.0, 3, 2]), [[1.0, 2, 0], [0, 3, 0], [0, 0, -4]]])
    b = np.array([np.diag([2.0, 3]), [[3.0, 0], [4, 5]], np.eye(2), [[1.0, 2], [2, 4]], np.zeros((2, 2)),
                  [[0.0, 1], [0, 0]], [[1.0, -1], [1, 1]], np.diag([-1.0, 2]), np.diag([5.0, 1]),
                  [[1.0, 2], [3, 4]]])
    n, dt, sfx = len(a), NP[key], SFX[key]
    from conftest import need_warp, run

    need_warp(mods)
    args = [Arr(a.astype(dt), f"mat33{sfx}"), Arr(b.astype(dt), f"mat22{sfx}"),
            *_inputs(np.random.default_rng(0), key, n)[2:]]
    got, want = (run(m, f"tuple_forms_{key}", n, args, "cpu") for m in mods)
    tol = TOL[key]
    np.testing.assert_allclose(got[3][:, 0], want[3][:, 0], **tol)  # singular values
    np.testing.assert_allclose(got[3][:, 1], want[3][:, 1], **tol)  # eigenvalues (of A + A^T)
    distinct = np.min(np.abs(np.diff(np.abs(np.linalg.svd(a, compute_uv=False)), axis=1)), 1) > 0.1
    assert distinct.sum() >= 3
    for k in (0, 1):  # U and V
        np.testing.assert_allclose(got[2][distinct, k], want[2][distinct, k], **tol)
    distinct2 = np.abs(np.diff(np.linalg.svd(b, compute_uv=False), axis=1))[:, 0] > 0.1
    assert distinct2.sum() >= 4
    np.testing.assert_allclose(got[4][distinct2], want[4][distinct2], **tol)
    np.testing.assert_allclose(got[5][distinct2], want[5][distinct2], **tol)
    _check_conventions(a, b, *(g.astype(np.float64) for g in got[2:]), atol=1e-5 if key == "f32" else 1e-9)


def test_svd2_of_scaled_orthogonal_matrices_reconstructs(mods):
    """A^T A = s^2 I: Warp 1.19 returns U = V = I there (its product is sI, not A); tilewarp returns
    U = A / s, V = I, which reconstructs A: the one deliberate difference from Warp's factors."""
    b = np.array([[[0.0, -1], [1, 0]], [[0.0, 2], [2, 0]], [[0.6, -0.8], [0.8, 0.6]], [[3.0, 0], [0, -3]]])
    n = len(b)
    from conftest import run

    args = [Arr(np.zeros((n, 3, 3), np.float32), "mat33"), Arr(b.astype(np.float32), "mat22"),
            *_inputs(np.random.default_rng(0), "f32", n)[2:]]
    m22, v2 = run(mods[0], "tuple_forms_f32", n, args, "cpu")[4:]
    np.testing.assert_allclose(np.einsum("nij,nj,nkj->nik", m22[:, 0], v2, m22[:, 1]), b, atol=1e-6)
    np.testing.assert_allclose(v2, [[1, 1], [2, 2], [1, 1], [3, 3]], atol=1e-6)
    np.testing.assert_array_equal(m22[[0, 1, 3], 1], np.broadcast_to(np.eye(2), (3, 2, 2)))


def test_control_flow_and_funcs(mods, device, rng):
    n = 32
    a = rng.uniform(-2, 2, (n, 3, 3)).astype(np.float32)
    args = [Arr(a, "mat33"), Arr(rng.integers(0, 2, n).astype(np.int32)),
            Arr(np.zeros((n, 3, 3, 3), np.float32), "mat33"), Arr(np.zeros((n, 3, 3), np.float32), "vec3")]
    got = launch_both(mods, "control_flow", n, args, device, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[3][:, 2], np.linalg.svd(a.astype(np.float64), compute_uv=False)
                               * [1, 1, 1] * np.stack([np.ones(n), np.ones(n), np.sign(np.linalg.det(a))], 1),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("key", ["f32", "f64"])
def test_inverse_approx(mods, device, rng, key):
    n, dt, sfx = 32, NP[key], SFX[key]
    mats = [rng.uniform(-1, 1, (n, k, k)) + 3 * np.eye(k) for k in (3, 2, 4)]
    args = [Arr(m.astype(dt), f"mat{k}{k}{sfx}") for m, k in zip(mats, (3, 2, 4))]
    args += [Arr(np.zeros((n, k, k), dt), f"mat{k}{k}{sfx}") for k in (3, 2, 4)]
    got = launch_both(mods, f"approx_{key}", n, args, device, **TOL[key])
    for g, m in zip(got[3:], mats):
        np.testing.assert_allclose(g, np.linalg.inv(m), rtol=1e-4 if key == "f32" else 1e-12, atol=1e-5)


def test_argmin_argmax(mods, device, rng):
    n = 64
    v = rng.uniform(-1, 1, (n, 4)).astype(np.float32)
    v[::5, 1] = v[::5, 3]  # ties: the first index wins
    v[::3, rng.integers(0, 4)] = np.nan  # NaNs are skipped
    v[7] = np.nan  # all NaN: 0
    v[9, :2] = np.nan
    vi = rng.integers(-3, 3, (n, 3)).astype(np.int32)
    vd = rng.uniform(-1, 1, (n, 2))
    vd[::4, 0] = vd[::4, 1]
    args = [Arr(v, "vec4"), Arr(vi, "vec3i"), Arr(vd, "vec2d"), Arr(np.zeros((n, 6), np.uint32))]
    got = launch_both(mods, "arg_extremes", n, args, device)[3]
    assert got.dtype == np.uint32
    np.testing.assert_array_equal(got[:, 2], np.argmin(vi, 1))
    np.testing.assert_array_equal(got[:, 5], np.argmax(vd, 1))
    ok = ~np.all(np.isnan(v), 1)
    np.testing.assert_array_equal(got[ok, 0], np.nanargmin(v[ok], 1))
    np.testing.assert_array_equal(got[ok, 1], np.nanargmax(v[ok], 1))
    assert got[7, 0] == got[7, 1] == 0


# ---- bad inputs: the error class, at the user's file:line ------------------------------------------

check = check_located  # tests/conftest.py


@wp.kernel
def k_svd3_of_mat22():
    U, s, V = wp.svd3(wp.mat22())  # <- error


@wp.kernel
def k_svd3_int_matrix():
    U, s, V = wp.svd3(wp.matrix(shape=(3, 3), dtype=int))  # <- error


@wp.kernel
def k_output_array_element(out: wp.array(dtype=wp.mat33)):
    s = wp.vec3()
    V = wp.mat33()
    wp.svd3(wp.mat33(), out[0], s, V)  # <- error


@wp.kernel
def k_output_undefined():
    U = wp.mat33()
    V = wp.mat33()
    wp.svd3(wp.mat33(), U, sigma, V)  # <- error


@wp.kernel
def k_output_wrong_type():
    Q = wp.mat33d()
    R = wp.mat33()
    wp.qr3(wp.mat33(), Q, R)  # <- error


@wp.kernel
def k_output_wrong_count():
    Q = wp.mat33()
    wp.eig3(wp.mat33(), Q, Q, Q)  # <- error


@wp.kernel
def k_output_form_has_no_value():
    Q = wp.mat33()
    d = wp.vec3()
    x = wp.eig3(wp.mat33(), Q, d)  # <- error


@wp.kernel
def k_argmin_scalar():
    i = wp.argmin(1.0)  # <- error


@wp.kernel
def k_inverse_approx_5x5():
    m = wp.inverse_approx(wp.matrix(shape=(5, 5), dtype=float))  # <- error


BAD = [
    (k_svd3_of_mat22, KernelTypeError, "svd3(): expects a float 3x3 matrix", "mat22"),
    (k_svd3_int_matrix, KernelTypeError, "svd3(): expects a float 3x3 matrix"),
    (k_output_array_element, KernelTypeError, "writes into its argument 'out[0]'", "local variable"),
    (k_output_undefined, KernelTypeError, "'sigma'", "local variable"),
    (k_output_wrong_count, KernelTypeError, "eig3()"),
    (k_output_wrong_type, KernelTypeError, "qr3(): output argument 'Q' is a mat33d", "is a mat33"),
    (k_output_form_has_no_value, KernelTypeError),
    (k_argmin_scalar, KernelTypeError, "argmin(): expects one vector"),
    (k_inverse_approx_5x5, KernelTypeError, "inverse_approx(): expects a float 2x2, 3x3 or 4x4 matrix"),
]


@pytest.mark.parametrize("kernel,cls,fragments", [(k, c, f) for k, c, *f in BAD],
                         ids=[b[0].__name__ for b in BAD])
def test_bad_input(kernel, cls, fragments):
    check(kernel, cls, *fragments)
