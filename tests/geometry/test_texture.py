"""wp.Texture1D / 2D / 3D and wp.texture_sample: samples against a NumPy reference (CLOSEST and
LINEAR filtering, every address mode, normalized and texel coordinates, 1/2/4 channels, the integer
and half texel formats, mip levels with LOD blending), coordinate and LOD gradients against finite
differences, warp-lang on the CPU, textures in structs and arrays, the Python API and bad input."""
import numpy as np
import pytest

import conftest
import tilewarp as wp
from tilewarp.errors import KernelTypeError, LaunchError

MODES = (wp.TextureAddressMode.WRAP, wp.TextureAddressMode.CLAMP, wp.TextureAddressMode.MIRROR,
         wp.TextureAddressMode.BORDER)
TEXTURES = {1: wp.Texture1D, 2: wp.Texture2D, 3: wp.Texture3D}
RESULTS = {1: float, 2: wp.vec2f, 4: wp.vec4f}
SCALE = {np.uint8: 255.0, np.int8: 127.0, np.uint16: 65535.0, np.int16: 32767.0}

# ---- the NumPy reference ------------------------------------------------------------------------------


def _axis(u, n, scale, mode, linear):
    """Texel indices (-1: a border zero) and weights along one axis, per point (float64)."""
    x = np.asarray(u, np.float64) * scale
    if linear:
        i0 = np.floor(x - 0.5)
        f = (x - 0.5) - i0
        idx, w = [i0, i0 + 1], [1.0 - f, f]
    else:
        idx, w = [np.floor(x)], [np.ones_like(x)]
    out = []
    for i in idx:
        i = i.astype(np.int64)
        if mode == wp.TextureAddressMode.WRAP:
            i = np.mod(i, n)
        elif mode == wp.TextureAddressMode.MIRROR:
            m = np.mod(i, 2 * n)
            i = np.where(m < n, m, 2 * n - 1 - m)
        elif mode == wp.TextureAddressMode.CLAMP:
            i = np.clip(i, 0, n - 1)
        else:
            i = np.where((i < 0) | (i >= n), -1, i)
        out.append(i)
    return out, w


def _sample_level(level, coords, base, normalized, modes, linear):
    """``level``: (depth, height, width, channels) texels as float64 (leading axes dropped below 3D);
    ``coords``: (points, ndim)."""
    ndim = coords.shape[1]
    size = level.shape[:ndim][::-1]  # (width, height, depth)
    axes = [_axis(coords[:, a], size[a], size[a] if normalized else size[a] / base[a], modes[a], linear)
            for a in range(ndim)]
    result = np.zeros((coords.shape[0], level.shape[-1]))
    for corner in np.ndindex(*(len(ax[0]) for ax in axes)):
        weight = np.ones(coords.shape[0])
        index, border = [], np.zeros(coords.shape[0], bool)
        for a in range(ndim):
            i = axes[a][0][corner[a]]
            weight = weight * axes[a][1][corner[a]]
            border |= i < 0
            index.append(np.maximum(i, 0))
        texel = level[tuple(reversed(index))]
        result += np.where(border[:, None], 0.0, texel) * weight[:, None]
    return result


def _levels(data, ndim, count):
    """Mip levels by halving each axis (pairs averaged, the last texel of an odd axis dropped)."""
    out = [data]
    for _ in range(count - 1):
        level = out[-1]
        for axis in range(ndim):
            n = level.shape[axis] // 2
            if n >= 1:
                level = 0.5 * (np.take(level, 2 * np.arange(n), axis) + np.take(level, 2 * np.arange(n) + 1, axis))
        out.append(level)
    return out


def reference(data, coords, normalized=True, modes=None, linear=True, lod=None):
    """Samples of texture ``data`` (NumPy, the texture's layout) at ``coords`` (points, ndim)."""
    coords = np.asarray(coords, np.float64).reshape(len(coords), -1)
    ndim = coords.shape[1]
    texels = data.astype(np.float64) / SCALE.get(data.dtype.type, 1.0)
    if data.dtype.type in (np.int8, np.int16):
        texels = np.maximum(texels, -1.0)
    if texels.ndim == ndim:
        texels = texels[..., None]
    modes = modes or [wp.TextureAddressMode.CLAMP] * ndim
    base = texels.shape[:ndim][::-1]
    if lod is None:
        return _sample_level(texels, coords, base, normalized, modes, linear)
    levels = _levels(texels, ndim, lod[1])
    lo = np.clip(np.floor(lod[0]), 0, len(levels) - 1).astype(int)
    t = np.clip(lod[0], 0, len(levels) - 1) - lo
    out = np.zeros((len(coords), texels.shape[-1]))
    for k in range(len(coords)):
        a = _sample_level(levels[lo[k]], coords[k:k + 1], base, normalized, modes, linear)
        b = _sample_level(levels[min(lo[k] + 1, len(levels) - 1)], coords[k:k + 1], base, normalized, modes, linear)
        out[k] = a + t[k] * (b - a)
    return out


# ---- kernels -----------------------------------------------------------------------------------------


@wp.kernel
def sample1(tex: wp.Texture1D, uv: wp.array(dtype=float), out: wp.array(dtype=wp.vec4f), lod: float):
    i = wp.tid()
    if tex.num_channels == 1:
        out[i] = wp.vec4f(wp.texture_sample(tex, uv[i], dtype=float, lod=lod), 0.0, 0.0, 0.0)
    elif tex.num_channels == 2:
        v = wp.texture_sample(tex, uv[i], dtype=wp.vec2f, lod=lod)
        out[i] = wp.vec4f(v[0], v[1], 0.0, 0.0)
    else:
        out[i] = wp.texture_sample(tex, uv[i], dtype=wp.vec4f, lod=lod)


@wp.kernel
def sample2(tex: wp.Texture2D, uv: wp.array(dtype=wp.vec2f), out: wp.array(dtype=wp.vec4f), lod: float):
    i = wp.tid()
    if tex.num_channels == 1:
        out[i] = wp.vec4f(wp.texture_sample(tex, uv[i], dtype=float, lod=lod), 0.0, 0.0, 0.0)
    elif tex.num_channels == 2:
        v = wp.texture_sample(tex, uv[i][0], uv[i][1], dtype=wp.vec2f, lod=lod)
        out[i] = wp.vec4f(v[0], v[1], 0.0, 0.0)
    else:
        out[i] = wp.texture_sample(tex, uv[i], dtype=wp.vec4f, lod=lod)


@wp.kernel
def sample3(tex: wp.Texture3D, uv: wp.array(dtype=wp.vec3f), out: wp.array(dtype=wp.vec4f), lod: float):
    i = wp.tid()
    if tex.num_channels == 1:
        out[i] = wp.vec4f(wp.texture_sample(tex, uv[i], dtype=float, lod=lod), 0.0, 0.0, 0.0)
    elif tex.num_channels == 2:
        v = wp.texture_sample(tex, uv[i], wp.vec2f, lod)
        out[i] = wp.vec4f(v[0], v[1], 0.0, 0.0)
    else:
        out[i] = wp.texture_sample(tex, uv[i][0], uv[i][1], uv[i][2], dtype=wp.vec4f, lod=lod)


SAMPLE = {1: sample1, 2: sample2, 3: sample3}
COORD = {1: float, 2: wp.vec2f, 3: wp.vec3f}


def _sample(tex, coords, device, lod=-1.0):
    ndim = tex.ndim
    pts = wp.array(coords[:, 0] if ndim == 1 else coords, dtype=COORD[ndim], device=device)
    out = wp.zeros(len(coords), dtype=wp.vec4f, device=device)
    wp.launch(SAMPLE[ndim], dim=len(coords), inputs=[tex, pts, out, lod], device=device)
    return out.numpy()[:, :tex.num_channels]


def _data(rng, ndim, channels, size=(5, 4, 3), dtype=np.float32):
    shape = tuple(reversed(size[:ndim])) + ((channels,) if channels > 1 else ())
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _coords(rng, ndim, n, size, normalized):
    c = rng.uniform(-1.5, 2.5, size=(n, ndim))
    return (c if normalized else c * np.array(size[:ndim])).astype(np.float32)


# ---- samples -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ndim", [1, 2, 3])
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
@pytest.mark.parametrize("linear", [True, False], ids=["linear", "closest"])
def test_samples_match_reference(device, ndim, mode, linear):
    rng = np.random.default_rng(ndim * 10 + int(mode))
    for normalized in (True, False):
        for channels in (1, 2, 4):
            data = _data(rng, ndim, channels)
            tex = TEXTURES[ndim](data, filter_mode=int(linear), address_mode=mode, normalized_coords=normalized,
                                 device=device)
            coords = _coords(rng, ndim, 200, (5, 4, 3), normalized)
            want = reference(data, coords, normalized, [mode] * ndim, linear)
            np.testing.assert_allclose(_sample(tex, coords, device), want, rtol=1e-5, atol=1e-5,
                                       err_msg=f"normalized={normalized} channels={channels}")


def test_per_axis_modes_and_formats(device):
    """Different modes per axis, and texels of every format: uint8 / uint16 read as [0, 1], int8 /
    int16 as [-1, 1] (the most negative value clamped), float16 and int32 as they are."""
    rng = np.random.default_rng(7)
    modes = (wp.TextureAddressMode.MIRROR, wp.TextureAddressMode.BORDER, wp.TextureAddressMode.WRAP)
    for dtype in (np.uint8, np.int8, np.uint16, np.int16, np.float16, np.int32, np.uint32):
        data = _data(rng, 3, 2, dtype=dtype)
        if dtype in (np.int32, np.uint32):
            data = (data % 1000).astype(dtype)
        linear = dtype not in (np.int32, np.uint32)
        tex = wp.Texture3D(data, address_mode=modes, device=device)
        assert tex.dtype is getattr(wp, np.dtype(dtype).name) and tex.num_channels == 2
        assert tex.filter_mode == (wp.TextureFilterMode.LINEAR if linear else wp.TextureFilterMode.CLOSEST)
        coords = _coords(rng, 3, 300, (5, 4, 3), True)
        want = reference(data, coords, True, list(modes), linear)
        np.testing.assert_allclose(_sample(tex, coords, device), want, rtol=1e-5, atol=1e-5, err_msg=str(dtype))


def test_texel_centres_and_documented_examples(device):
    data = np.array([0.0, 10.0, 20.0, 30.0], dtype=np.float32)
    tex = wp.Texture1D(data, normalized_coords=False, device=device)
    np.testing.assert_allclose(_sample(tex, np.array([[1.0], [0.5], [3.5], [2.25]], np.float32), device)[:, 0],
                               [5.0, 0.0, 30.0, 17.5])
    grid = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    tex = wp.Texture3D(grid, filter_mode=wp.TextureFilterMode.CLOSEST, normalized_coords=False, device=device)
    np.testing.assert_allclose(_sample(tex, np.array([[1.5, 0.5, 0.5], [0.5, 1.5, 1.5]], np.float32), device)[:, 0],
                               [1.0, 6.0])
    tex = wp.Texture3D(grid, device=device)  # linear, normalized: the centre averages all eight
    np.testing.assert_allclose(_sample(tex, np.full((1, 3), 0.5, np.float32), device)[0, 0], 3.5)


def test_mip_levels(device):
    rng = np.random.default_rng(11)
    for ndim in (1, 2, 3):
        size = (16, 8, 6)
        data = _data(rng, ndim, 2, size=size)
        for normalized in (True, False):
            tex = TEXTURES[ndim](data, num_mip_levels=0, normalized_coords=normalized,
                                 address_mode=wp.TextureAddressMode.WRAP, device=device)
            assert tex.is_mipmapped and tex.num_mip_levels == 5  # down to one texel along the longest axis
            coords = _coords(rng, ndim, 40, size, normalized)
            for lod in (-1.0, 0.0, 0.3, 1.0, 2.6, 9.0):
                want = reference(data, coords, normalized, [wp.TextureAddressMode.WRAP] * ndim, True,
                                 lod=(np.full(len(coords), max(lod, 0.0)), tex.num_mip_levels))
                np.testing.assert_allclose(_sample(tex, coords, device, lod), want, rtol=1e-5, atol=1e-5,
                                           err_msg=f"ndim={ndim} normalized={normalized} lod={lod}")
    tex = wp.Texture2D(np.ones((4, 4), np.float32), num_mip_levels=2, mip_filter_mode=wp.TextureFilterMode.CLOSEST,
                       device=device)
    assert tex.mip_filter_mode == wp.TextureFilterMode.CLOSEST


# ---- gradients -----------------------------------------------------------------------------------------


@wp.kernel
def grad2(tex: wp.Texture2D, uv: wp.array(dtype=wp.vec2f), lod: wp.array(dtype=float), w: wp.vec4f,
          out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.dot(wp.texture_sample(tex, uv[i], dtype=wp.vec4f, lod=lod[i]), w)


@wp.kernel
def grad3(tex: wp.Texture3D, u: wp.array(dtype=float), v: wp.array(dtype=float), w: wp.array(dtype=float),
          out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.texture_sample(tex, u[i], v[i], w[i], dtype=float)


def test_coordinate_and_lod_gradients(device):
    """Tape gradients equal the reference's central differences (away from cell boundaries, where the
    sample is smooth), for every address mode, with LOD blending."""
    rng = np.random.default_rng(5)
    data = _data(rng, 2, 4, size=(8, 6))
    weights = np.array([1.0, -0.5, 2.0, 0.25])
    for mode in MODES:
        tex = wp.Texture2D(data, address_mode=mode, num_mip_levels=2, device=device)
        texel = rng.integers(-8, 16, size=(40, 2)) + rng.uniform(0.1, 0.4, size=(40, 2))  # inside a cell
        uv = (texel / [8.0, 6.0]).astype(np.float32)
        lods = rng.uniform(0.1, 0.9, size=40).astype(np.float32)
        pos = wp.array(uv, dtype=wp.vec2f, device=device, requires_grad=True)
        lod = wp.array(lods, dtype=float, device=device, requires_grad=True)
        out = wp.zeros(40, dtype=float, device=device, requires_grad=True)
        with wp.Tape() as tape:
            wp.launch(grad2, dim=40, inputs=[tex, pos, lod, wp.vec4f(*weights), out], device=device)
        tape.backward(grads={out: wp.ones_like(out)})

        def f(c, level):
            return reference(data, c, True, [mode] * 2, True, lod=(level, 2)) @ weights

        h = 1e-4
        for axis in range(2):
            step = np.zeros(2)
            step[axis] = h
            fd = (f(uv + step, lods) - f(uv - step, lods)) / (2 * h)
            np.testing.assert_allclose(pos.grad.numpy()[:, axis], fd, rtol=1e-3, atol=2e-2, err_msg=mode.name)
        fd = (f(uv, lods + h) - f(uv, lods - h)) / (2 * h)
        np.testing.assert_allclose(lod.grad.numpy(), fd, rtol=1e-3, atol=1e-3, err_msg=mode.name)


def test_gradient_edge_cases(device):
    """CLOSEST and clamped regions have zero gradients; separate scalar coordinates get their own."""
    data = np.arange(1, 28, dtype=np.float32).reshape(3, 3, 3)
    for filter_mode, want in ((wp.TextureFilterMode.CLOSEST, (0.0, 0.0, 0.0)),
                              (wp.TextureFilterMode.LINEAR, (1.0, 3.0, 9.0))):
        tex = wp.Texture3D(data, filter_mode=filter_mode, normalized_coords=False, device=device)
        coords = [wp.array([1.2, 5.0], dtype=float, device=device, requires_grad=True) for _ in range(3)]
        out = wp.zeros(2, dtype=float, device=device, requires_grad=True)
        with wp.Tape() as tape:
            wp.launch(grad3, dim=2, inputs=[tex, *coords, out], device=device)
        tape.backward(grads={out: wp.ones_like(out)})
        np.testing.assert_allclose([c.grad.numpy()[0] for c in coords], want, atol=1e-5)
        np.testing.assert_allclose([c.grad.numpy()[1] for c in coords], 0.0)  # clamped beyond the edge


# ---- warp-lang ----------------------------------------------------------------------------------------

WARP_KERNELS = """
import WP as wp

@wp.kernel
def sample(tex: wp.Texture2D, uv: wp.array(dtype=wp.vec2f), lod: wp.array(dtype=float),
           out: wp.array(dtype=wp.vec2f)):
    i = wp.tid()
    out[i] = wp.texture_sample(tex, uv[i], dtype=wp.vec2f, lod=lod[i])
"""


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
def test_matches_warp(mode):
    """Values and coordinate / LOD gradients equal warp-lang's CPU textures (mip levels included)."""
    mods = conftest.load_both(WARP_KERNELS)
    conftest.need_warp(mods)
    rng = np.random.default_rng(int(mode))
    data = _data(rng, 2, 2, size=(12, 7))
    coords = _coords(rng, 2, 100, (12, 7), True)
    lods = rng.uniform(-0.5, 3.0, size=100).astype(np.float32)
    results = []
    for mod in mods:
        W = mod.wp
        for normalized in (True, False):
            tex = W.Texture2D(data, address_mode=mode, normalized_coords=normalized, num_mip_levels=3, device="cpu")
            uv = W.array(coords if normalized else coords * [12, 7], dtype=W.vec2f, device="cpu", requires_grad=True)
            lod = W.array(lods, dtype=float, device="cpu", requires_grad=True)
            out = W.zeros(100, dtype=W.vec2f, device="cpu", requires_grad=True)
            tape = W.Tape()
            with tape:
                W.launch(mod.sample, dim=100, inputs=[tex, uv, lod, out], device="cpu")
            tape.backward(grads={out: W.array(np.tile([1.0, -2.0], (100, 1)), dtype=W.vec2f, device="cpu")})
            results.append((out.numpy(), uv.grad.numpy(), lod.grad.numpy()))
    for got, want in zip(results[:2], results[2:]):
        for g, w, what in zip(got, want, ("values", "coordinate gradients", "lod gradients")):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-3, err_msg=what)


# ---- textures in structs and arrays -----------------------------------------------------------------


@wp.struct
class Material:
    albedo: wp.Texture2D
    scale: float


@wp.kernel
def through_struct_and_array(m: Material, texs: wp.array(dtype=wp.Texture2D), uv: wp.vec2f,
                             out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.texture_sample(texs[i], uv, dtype=float) + m.scale * wp.texture_sample(m.albedo, uv, dtype=float)
    if i == 0:
        out[2] = float(m.albedo.width * 100 + texs[1].height)


@wp.kernel
def struct_without_sampling(m: Material, out: wp.array(dtype=float)):
    out[0] = m.scale  # the texture field is only carried: the kernel still compiles its type


def test_struct_field_and_array_element(device):
    a = wp.Texture2D(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32), filter_mode=0, device=device)
    b = wp.Texture2D(np.full((3, 5), 10.0, np.float32), device=device)
    m = Material()
    m.albedo = b
    m.scale = 2.0
    texs = wp.array([a, b], dtype=wp.Texture2D, device=device)
    out = wp.zeros(3, dtype=float, device=device)
    wp.launch(through_struct_and_array, dim=2, inputs=[m, texs, wp.vec2f(0.7, 0.2), out], device=device)
    np.testing.assert_allclose(out.numpy(), [2.0 + 20.0, 10.0 + 20.0, 503.0])
    wp.launch(struct_without_sampling, dim=1, inputs=[m, out], device=device)
    assert out.numpy()[0] == 2.0


# ---- the Python API -----------------------------------------------------------------------------------


def test_properties_and_copies(device):
    data = np.random.default_rng(0).random((3, 4, 5, 4)).astype(np.float32)
    tex = wp.Texture3D(data, address_mode=(0, 3, 2), normalized_coords=False, device=device)
    assert (tex.width, tex.height, tex.depth, tex.num_channels, tex.ndim) == (5, 4, 3, 4, 3)
    assert tex.dtype is wp.float32 and tex.filter_mode is wp.TextureFilterMode.LINEAR
    assert (tex.address_mode_u, tex.address_mode_v, tex.address_mode_w) == (
        wp.TextureAddressMode.WRAP, wp.TextureAddressMode.BORDER, wp.TextureAddressMode.MIRROR)
    assert tex.normalized_coords is False and not tex.is_mipmapped and tex.id > 0
    back = np.zeros_like(data)
    tex.copy_to(back)
    np.testing.assert_array_equal(back, data)
    vec = wp.array(data[::-1].copy(), dtype=wp.vec4f, device=device)
    tex.copy_from(vec)  # a vec4 array: the channels
    out = wp.zeros((3, 4, 5), dtype=wp.vec4f, device=device)
    tex.copy_to(out)
    np.testing.assert_array_equal(out.numpy(), data[::-1])
    other = wp.Texture3D(width=5, height=4, depth=3, num_channels=4, dtype=float, device=device)
    other.copy_from(tex)
    other.copy_to(back)
    np.testing.assert_array_equal(back, data[::-1])
    if not wp.get_device(device).is_cuda:
        for handle in ("cuda_array", "cuda_texture", "cuda_surface"):
            with pytest.raises(RuntimeError, match="only supported for CUDA textures"):
                getattr(tex, handle)
    one = wp.Texture1D(width=4, num_channels=2, dtype=wp.uint8, device=device)
    assert one.height == 1 and one.depth == 1 and one.dtype is wp.uint8
    np.testing.assert_array_equal(_sample(one, np.array([[0.5]], np.float32), device), [[0.0, 0.0]])


def test_bad_input(device):
    with pytest.raises(ValueError, match="Unsupported texture dtype"):
        wp.Texture2D(np.zeros((4, 4), np.float64), device=device)
    with pytest.raises(ValueError, match="num_channels must be 1, 2, or 4"):
        wp.Texture2D(np.zeros((4, 4, 3), np.float32), device=device)
    with pytest.raises(ValueError, match="filter_mode=TextureFilterMode.CLOSEST"):
        wp.Texture1D(np.zeros(4, np.int32), filter_mode=wp.TextureFilterMode.LINEAR, device=device)
    with pytest.raises(ValueError, match="Invalid texture address mode for axis 1"):
        wp.Texture2D(np.zeros((4, 4), np.float32), address_mode_v=7, device=device)
    with pytest.raises(ValueError, match="width must be a positive integer"):
        wp.Texture2D(height=3, device=device)
    with pytest.raises(ValueError, match="num_mip_levels \\(4\\) exceeds the maximum"):
        wp.Texture2D(np.zeros((4, 4), np.float32), num_mip_levels=4, device=device)
    tex = wp.Texture2D(np.zeros((2, 3), np.float32), device=device)
    with pytest.raises(ValueError, match=r"Incompatible array shape for copy: texture shape=\(2, 3\)"):
        tex.copy_from(np.zeros((3, 2), np.float32))
    mip = wp.Texture2D(np.zeros((4, 4), np.float32), num_mip_levels=2, device=device)
    with pytest.raises(RuntimeError, match="mipmapped"):
        mip.copy_from(np.zeros((4, 4), np.float32))
    pts = wp.zeros(1, dtype=wp.vec3f, device=device)
    with pytest.raises(LaunchError, match="argument 'tex'"):
        wp.launch(sample3, dim=1, inputs=[tex, pts, wp.zeros(1, dtype=wp.vec4f, device=device), -1.0], device=device)


@wp.kernel
def bad_coordinates(tex: wp.Texture2D, out: wp.array(dtype=float)):
    out[0] = wp.texture_sample(tex, wp.vec3f(0.0, 0.0, 0.0), dtype=float)  # <- error


@wp.kernel
def bad_result(tex: wp.Texture2D, out: wp.array(dtype=float)):
    out[0] = wp.texture_sample(tex, wp.vec2f(0.0, 0.0), dtype=wp.vec3f)[0]  # <- error


@wp.kernel
def no_result_type(tex: wp.Texture2D, out: wp.array(dtype=float)):
    out[0] = wp.texture_sample(tex, wp.vec2f(0.0, 0.0))  # <- error


@wp.kernel
def bad_keyword(tex: wp.Texture2D, out: wp.array(dtype=float)):
    out[0] = wp.texture_sample(tex, 0.5, 0.5, dtype=float, mode=1)  # <- error


@wp.kernel
def not_a_texture(tex: wp.array(dtype=float), out: wp.array(dtype=float)):
    out[0] = wp.texture_sample(tex, 0.5, dtype=float)  # <- error


def test_kernel_type_errors():
    tex = wp.Texture2D(np.zeros((2, 2), np.float32))
    out = wp.zeros(1, dtype=float)
    conftest.check_located(bad_coordinates, KernelTypeError, "a 2D texture takes a vec2f or 2 floats",
                           inputs=[tex, out])
    conftest.check_located(bad_result, KernelTypeError, "unsupported texture type `vec3`", inputs=[tex, out])
    conftest.check_located(no_result_type, KernelTypeError, "needs dtype=", inputs=[tex, out])
    conftest.check_located(bad_keyword, KernelTypeError, "unexpected keyword argument 'mode'", inputs=[tex, out])
    conftest.check_located(not_a_texture, KernelTypeError, "must be a wp.Texture1D", inputs=[out, out])


def test_texture_on_another_device():
    if wp.get_cuda_device_count() == 0:
        pytest.skip("needs a CPU and a GPU")
    tex = wp.Texture2D(np.zeros((2, 2), np.float32), device="cpu")
    pts = wp.zeros(1, dtype=wp.vec2f, device="cuda:0")
    with pytest.raises(LaunchError, match="argument 'tex': a texture on 'cpu'"):
        wp.launch(sample2, dim=1, inputs=[tex, pts, wp.zeros(1, dtype=wp.vec4f, device="cuda:0"), -1.0],
                  device="cuda:0")
