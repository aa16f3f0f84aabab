"""Whole kernels for tests/autodiff/test_grad_kernels.py, one text loaded into tilewarp and warp-lang.

Everything is float64 and spelled so Warp 1.19 compiles it too (typed constants, no tilewarp-only
syntax), so one text serves both the finite-difference checks and the comparison with Warp.
"""

TEXT = '''
import WP as wp

f64 = wp.float64


@wp.struct
class Spring:
    k: wp.float64
    rest: wp.float64
    dir: wp.vec3d


@wp.struct
class Params:
    gain: wp.float64
    offsets: wp.array(dtype=wp.float64)
    spring: Spring


@wp.struct
class Holder:
    inner: Params
    weights: wp.array(dtype=wp.vec3d)


@wp.func
def spring_force(s: Spring, d: wp.vec3d) -> wp.vec3d:
    n = wp.length(d)
    return s.k * (n - s.rest) * d / n + s.dir * s.k


@wp.func
def offset_of(p: Params, i: int) -> wp.float64:
    return p.offsets[i] * p.gain + p.spring.rest


@wp.kernel
def structs(p: Params, x: wp.array(dtype=wp.vec3d), k: wp.array(dtype=wp.float64),
            out: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    s = Spring(k[i], offset_of(p, i), x[i] * k[i])
    f = spring_force(s, x[i] + p.spring.dir)
    s.k = s.k * p.spring.k
    s.dir = wp.cross(s.dir, p.spring.dir)
    out[i] = f + spring_force(s, x[i] * p.offsets[i])


@wp.kernel
def struct_reads(p: Params, x: wp.array(dtype=wp.vec3d), k: wp.array(dtype=wp.float64),
                 out: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    s = Spring(k[i], offset_of(p, i), x[i] * k[i])
    out[i] = spring_force(s, x[i] + p.spring.dir) * p.offsets[i]


@wp.kernel
def nested_struct(h: Holder, x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    w = h.weights[i]
    out[i] = wp.dot(w, w) * x[i] + offset_of(h.inner, i) * wp.sin(x[i])


@wp.struct
class View:
    data: wp.array(dtype=wp.float64)
    k: wp.float64


@wp.func
def view_at(v: View, i: int) -> wp.float64:
    return v.data[i] * v.k


@wp.kernel
def local_struct(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64),
                 out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = View()
    v.data = y
    v.k = x[i]
    out[i] = v.data[i] * v.data[(i + 1) % y.shape[0]] + view_at(v, i)


@wp.kernel
def struct_loop(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), n: int,
                out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = View()
    v.data = y
    v.k = x[i]
    for j in range(n):
        v.k = v.k * f64(0.7) + wp.sin(v.k) * v.data[j]
    out[i] = view_at(v, i)


@wp.struct
class Particle:
    x: wp.vec3d
    m: wp.float64
    n: int


@wp.kernel
def struct_array(ps: wp.array(dtype=Particle), out: wp.array(dtype=wp.float64),
                 moved: wp.array(dtype=Particle)):
    i = wp.tid()
    p = ps[i]
    q = ps[(i + 1) % ps.shape[0]]
    out[i] = p.m * wp.length(p.x - q.x) + f64(p.n)
    moved[i] = Particle(p.x * q.m, p.m * p.m, p.n + 1)


@wp.kernel
def composites(v: wp.array(dtype=wp.vec3d), m: wp.array(dtype=wp.mat33d), q: wp.array(dtype=wp.quatd),
               t: wp.array(dtype=wp.transformd), out_v: wp.array(dtype=wp.vec3d),
               out_m: wp.array(dtype=wp.mat33d), out_q: wp.array(dtype=wp.quatd),
               out_s: wp.array(dtype=wp.float64)):
    i = wp.tid()
    a = v[i]
    M = m[i] * f64(0.5) + wp.outer(a, a)
    b = M * a
    qn = wp.normalize(q[i])
    r = wp.quat_rotate(qn, b) + wp.cross(a, b)
    tf = wp.transformd(wp.transform_get_translation(t[i]), wp.normalize(wp.transform_get_rotation(t[i])))
    moved = wp.transform_multiply(tf, wp.transformd(a, qn))
    out_v[i] = wp.transform_point(tf, r) + wp.transform_vector(moved, a)
    R = wp.quat_to_matrix(qn)
    out_m[i] = wp.transpose(M) * R + wp.diag(a) * wp.determinant(M)
    out_q[i] = wp.mul(qn, wp.transform_get_rotation(moved)) * wp.length(b)
    out_s[i] = wp.dot(a, r) + wp.trace(wp.inverse(M + wp.identity(n=3, dtype=wp.float64) * f64(4.0)))


@wp.kernel
def loops(x: wp.array(dtype=wp.float64), n: int, out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    s = x[i]
    for k in range(3):
        s = wp.sin(s) * f64(1.1) + x[(i + k) % x.shape[0]]
    acc = f64(0.0)
    for k in range(n):
        t = s
        for j in range(k):
            t = t * f64(0.9) + wp.cos(t) * f64(0.1)
        acc = acc + t * x[k]
        s = s * f64(0.95)
    j = int(0)
    while acc < f64(10.0) and j < 20:
        acc = acc * f64(1.2) + s * s
        j += 1
    out[i] = acc


@wp.kernel
def static_loops(x: wp.array(dtype=wp.float64), w: wp.array(dtype=wp.float64),
                 out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    s = x[i]
    for k in range(4):
        for j in range(2):
            s = wp.sin(s) * w[k] + x[(i + k + j) % x.shape[0]] * wp.exp(w[j])
    out[i] = s * s


@wp.kernel
def branches(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    a = x[i]
    b = y[i]
    c = f64(0.0)
    if a > b:
        c = a * b
        if a > f64(0.5):
            c = c + wp.sin(a)
    else:
        c = b - a * a
    if c < f64(-0.5):
        out[i] = -c * b
        return
    d = a * a if b > f64(0.0) else b * a
    r = wp.where(a > f64(0.0), c * a, c / (f64(1.0) + b * b))
    out[i] = r + d + wp.max(a, b) + wp.min(a, f64(0.3)) + wp.abs(b)


@wp.kernel
def atomics(x: wp.array(dtype=wp.float64), v: wp.array(dtype=wp.vec3d), idx: wp.array(dtype=wp.int32),
            sums: wp.array(dtype=wp.float64), vsums: wp.array(dtype=wp.vec3d), lo: wp.array(dtype=wp.float64),
            hi: wp.array(dtype=wp.float64)):
    i = wp.tid()
    j = idx[i]
    wp.atomic_add(sums, j, x[i] * x[i])
    wp.atomic_sub(sums, (j + 1) % sums.shape[0], wp.sin(x[i]))
    vsums[j] += v[i] * x[i]
    vsums[(j + 2) % vsums.shape[0]] -= wp.cross(v[i], v[j])
    wp.atomic_min(lo, j, f64(-1.0) - x[i] * x[i] * v[i][0] * v[i][0])
    wp.atomic_max(hi, j, wp.exp(x[i]) * v[i][1] * v[i][1])


@wp.kernel
def vector_minmax(v: wp.array(dtype=wp.vec3d), m: wp.array(dtype=wp.mat22d), idx: wp.array(dtype=wp.int32),
                  lo: wp.array(dtype=wp.vec3d), hi: wp.array(dtype=wp.mat22d)):
    i = wp.tid()
    wp.atomic_min(lo, idx[i], v[i])
    wp.atomic_max(hi, idx[i], m[i])


@wp.func
def blend(a: wp.float64, b: wp.float64) -> wp.float64:
    return wp.sin(a) * b + a * a


@wp.func
def twice(a: wp.float64, v: wp.vec3d):
    s = blend(a, v[0]) + blend(v[1], v[2])
    return s, v * s


@wp.func
def row_dot(row: wp.array(dtype=wp.float64), w: wp.array(dtype=wp.float64)) -> wp.float64:
    s = f64(0.0)
    for k in range(row.shape[0]):
        s += row[k] * w[k]
    return s


@wp.func
def capped(v: wp.vec3d, cap: wp.float64) -> wp.vec3d:
    n = wp.length(v)
    if n > cap:
        return v * (cap / n)
    return v


@wp.kernel
def funcs(A: wp.array2d(dtype=wp.float64), w: wp.array(dtype=wp.float64), v: wp.array(dtype=wp.vec3d),
          out: wp.array(dtype=wp.float64), out_v: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    row = A[i]
    d = row_dot(row, w)
    s, u = twice(d, v[i])
    out[i] = s + row_dot(A[(i + 1) % A.shape[0]], w) * d
    out_v[i] = capped(u, f64(2.0))
'''
