"""Warp's parameter names of the builtins, so kernel code may pass arguments by keyword
(``wp.expect_near(a, b, tolerance=1e-3)``, ``wp.clamp(x, low=0.0, high=1.0)``) as Warp allows.

The frontend turns keywords into positions before anything else sees the call (``bind``), so type
rules, emitters and autodiff only ever see positional arguments. A builtin with several argument
lists (the array forms of ``atomic_add``) lists each; the first that takes the keywords wins.
Tile builtins keep their own table beside their lowering (``frontend/tiles.py``).
"""
from __future__ import annotations


def _same(names: tuple, *builtins: str) -> dict:
    return {b: (names,) for b in builtins}


def _atomic(*values: str) -> tuple:
    """``(arr, i, value)`` .. ``(arr, i, j, k, l, value)``: one form per array dimension."""
    return tuple(("arr", *"ijkl"[:n], *values) for n in range(1, 5))


PARAMS: dict[str, tuple[tuple[str, ...], ...]] = {
    **_same(("x",), "abs", "acos", "asin", "atan", "bit_count", "cbrt", "ceil", "cos", "cosh", "degrees", "erf",
            "erfc", "erfcinv", "erfinv", "exp", "floor", "frac", "log", "log10", "log2", "nonzero", "radians",
            "rint", "round", "sign", "sin", "sinh", "sqrt", "step", "tan", "tanh", "trunc"),
    **_same(("a", "b"), "bit_and", "bit_or", "bit_xor", "cross", "cw_div", "cw_mul", "ddot", "div_approx", "dot",
            "expect_eq", "expect_neq", "lshift", "max", "min", "outer", "rshift", "spatial_cross",
            "spatial_cross_dual", "spatial_dot", "transform_multiply", "add", "sub", "mul", "div", "mod",
            "floordiv"),
    **_same(("a",), "argmax", "argmin", "determinant", "inverse", "inverse_approx", "invert", "isfinite", "isinf",
            "isnan", "length", "length_sq", "normalize", "trace", "transpose"),
    **_same(("state",), "randn", "sample_triangle", "sample_unit_cube", "sample_unit_disk",
            "sample_unit_hemisphere", "sample_unit_hemisphere_surface", "sample_unit_ring", "sample_unit_sphere",
            "sample_unit_sphere_surface", "sample_unit_square"),
    **{f"atomic_{op}": _atomic("value") for op in ("add", "sub", "min", "max", "exch", "and", "or", "xor")},
    "atomic_cas": _atomic("compare", "value"),
    **_same(("xform",), "transform_get_rotation", "transform_get_translation", "transform_inverse",
            "transform_to_matrix"),
    **_same(("mat",), "get_diag", "quat_from_matrix", "transform_from_matrix"),
    **_same(("v", "delta"), "norm_huber", "norm_pseudo_huber", "smooth_normalize"),
    **_same(("axis", "q"), "quat_twist", "quat_twist_angle", "quat_twist_angle_signed"),
    **_same(("state", "low", "high"), "randf", "randi", "randu"),
    **_same(("x", "y"), "copysign", "pow"),
    **_same(("vec",), "diag", "skew"),
    **_same(("a", "b", "t"), "lerp", "quat_slerp"),
    **_same(("v",), "norm_l1", "norm_l2"),
    **_same(("quat",), "quat_inverse", "quat_to_matrix"),
    **_same(("quat", "vec"), "quat_rotate", "quat_rotate_inv"),
    **_same(("svec",), "spatial_bottom", "spatial_top"),
    **_same(("A", "U", "sigma", "V"), "svd2", "svd3"),
    **_same(("t", "x"), "transform_twist", "transform_wrench"),
    "atan2": (("y", "x"),),
    "cast": (("a", "dtype"),),
    "clamp": (("x", "low", "high"),),
    "eig3": (("A", "Q", "d"),),
    "expect_near": (("a", "b", "tolerance"),),
    "lower_bound": (("arr", "value"), ("arr", "arr_begin", "arr_end", "value")),
    "poisson": (("state", "lam"),),
    "qr3": (("A", "Q", "R"),),
    "quat_from_axis_angle": (("axis", "angle"),),
    "quat_from_euler": (("e", "i", "j", "k"),),
    "quat_rpy": (("roll", "pitch", "yaw"),),
    "quat_to_axis_angle": (("quat", "axis", "angle"),),
    "quat_to_euler": (("q", "i", "j", "k"),),
    "quat_to_rpy": (("q",),),
    "rand_init": (("seed", "offset"),),
    "sample_cdf": (("state", "cdf"),),
    "select": (("cond", "value_if_false", "value_if_true"), ("arr", "value_if_false", "value_if_true")),
    "where": (("cond", "value_if_true", "value_if_false"), ("arr", "value_if_true", "value_if_false")),
    "smoothstep": (("a", "b", "x"),),
    "spatial_adjoint": (("r", "s"),),
    "transform_compose": (("position", "rotation", "scale"),),
    "transform_decompose": (("m",),),
    "transform_point": (("xform", "point"), ("mat", "point")),
    "transform_vector": (("xform", "vec"), ("mat", "vec")),
    "transform_set_rotation": (("xform", "q"),),
    "transform_set_translation": (("xform", "p"),),
    "velocity_at_point": (("qd", "r"),),
    # (bound by the entry itself, tilewarp/builtins/texture.py: dtype is a type; listed for the stubs)
    "texture_sample": (("tex", "u", "dtype", "lod"), ("tex", "uv", "dtype", "lod"), ("tex", "u", "v", "dtype", "lod"),
                       ("tex", "uvw", "dtype", "lod"), ("tex", "u", "v", "w", "dtype", "lod")),
    "closest_point_edge_edge": (("p1", "q1", "p2", "q2", "epsilon"),),
    "intersect_tri_tri": (("v0", "v1", "v2", "u0", "u1", "u2"),),
    "noise": (("state", "x"), ("state", "xy"), ("state", "xyz"), ("state", "xyzt")),
    "pnoise": (("state", "x", "px"), ("state", "xy", "px", "py"), ("state", "xyz", "px", "py", "pz"),
               ("state", "xyzt", "px", "py", "pz", "pt")),
    "curlnoise": tuple(("state", x, "octaves", "lacunarity", "gain") for x in ("xy", "xyz", "xyzt")),
}

PARAMS.update({  # volumes (builtins/volume.py)
    "volume_sample": (("id", "uvw", "sampling_mode", "dtype"),),
    "volume_sample_grad": (("id", "uvw", "sampling_mode", "grad", "dtype"),),
    "volume_lookup": (("id", "i", "j", "k", "dtype"),),
    "volume_store": (("id", "i", "j", "k", "value"),),
    **_same(("id", "uvw", "sampling_mode"), "volume_sample_f", "volume_sample_v"),
    "volume_sample_i": (("id", "uvw"),),
    "volume_sample_grad_f": (("id", "uvw", "sampling_mode", "grad"),),
    **_same(("id", "i", "j", "k"), "volume_lookup_f", "volume_lookup_v", "volume_lookup_i", "volume_lookup_index"),
    **_same(("id", "i", "j", "k", "value"), "volume_store_f", "volume_store_v", "volume_store_i"),
    "volume_sample_index": (("id", "uvw", "sampling_mode", "voxel_data", "background"),),
    "volume_sample_grad_index": (("id", "uvw", "sampling_mode", "voxel_data", "background", "grad"),),
    "volume_voxel_count": (("id",),),
    **_same(("id", "uvw"), "volume_index_to_world", "volume_index_to_world_dir"),
    **_same(("id", "xyz"), "volume_world_to_index", "volume_world_to_index_dir"),
})

PARAMS.update({
    "bvh_query_aabb": (("id", "low", "high", "root"),),
    "bvh_query_ray": (("id", "start", "dir", "root"),),
    "bvh_query_sphere": (("id", "center", "radius", "root"),),
    "bvh_query_capsule": (("id", "start", "dir", "radius", "root"),),
    "bvh_query_next": (("query", "index", "max_dist"),),
    "bvh_get_group_root": (("id", "group"),),
    "hash_grid_query": (("id", "point", "max_dist"), ("id", "point", "max_dist", "group")),
    "hash_grid_query_next": (("query", "index"),),
    "hash_grid_point_id": (("id", "index"),),
    **_same(("id", "point", "max_dist"), "mesh_query_point", "mesh_query_point_no_sign"),
    "mesh_query_point_sign_normal": (("id", "point", "max_dist", "epsilon"),),
    "mesh_query_point_sign_winding_number": (("id", "point", "max_dist", "accuracy", "threshold"),),
    "mesh_query_point_sign_parity": (("id", "point", "max_dist", "n_sample", "perturbation_scale"),),
    "mesh_query_furthest_point_no_sign": (("id", "point", "min_dist"),),
    **_same(("id", "start", "dir", "max_t", "root"), "mesh_query_ray", "mesh_query_ray_anyhit"),
    "mesh_query_ray_count_intersections": (("id", "start", "dir", "root"),),
    "mesh_query_aabb": (("id", "low", "high"),),
    "mesh_query_sphere": (("id", "center", "radius"),),
    **_same(("query", "index"), "mesh_query_next", "mesh_query_aabb_next"),
    **_same(("id", "face", "bary_u", "bary_v"), "mesh_eval_position", "mesh_eval_velocity"),
    "mesh_eval_face_normal": (("id", "face"),),
    **_same(("id", "index"), "mesh_get_point", "mesh_get_velocity", "mesh_get_index"),
    **_same(("id",), "mesh_get_bvh", "mesh_get"),
    **_same(("id", "group"), "mesh_get_group_root"),
})

#: values Warp gives parameters a call leaves out, where the type rule still needs them
DEFAULTS: dict[str, dict[str, float]] = {
    **{f"bvh_query_{k}": {"root": -1} for k in ("aabb", "ray", "sphere", "capsule")},
    "bvh_query_next": {"max_dist": float("inf")},
    **{name: {"root": -1} for name in ("mesh_query_ray", "mesh_query_ray_anyhit",
                                       "mesh_query_ray_count_intersections")},
    "mesh_query_point_sign_normal": {"epsilon": 1e-3},
    "mesh_query_point_sign_winding_number": {"accuracy": 2.0, "threshold": 0.5},
    "mesh_query_point_sign_parity": {"n_sample": 1, "perturbation_scale": 0.1},
    "expect_near": {"tolerance": 1e-6},
    "curlnoise": {"octaves": 1, "lacunarity": 2.0, "gain": 0.5},
}

_MISSING = object()


def bind(name: str, n_positional: int, keywords: list) -> list:
    """The arguments after the positional ones, in order: each a keyword's name (its value comes
    from that keyword) or ``(default,)``. Parameters left out at the end are dropped, so the type
    rule sees the shorter argument list it accepts. Raises ``TypeError`` with Python's wording."""
    forms = PARAMS.get(name, ())
    if not keywords and name not in DEFAULTS:
        return []
    if len(set(keywords)) != len(keywords):
        raise TypeError(f"{name}() got multiple values for a keyword argument")
    defaults = DEFAULTS.get(name, {})
    for form in forms:
        rest = form[n_positional:]
        if not set(keywords) <= set(rest):
            continue
        out = [k if k in keywords else (defaults[k],) if k in defaults else _MISSING for k in rest]
        while out and out[-1] is _MISSING:
            out.pop()
        if _MISSING in out:
            raise TypeError(f"{name}() missing argument '{rest[out.index(_MISSING)]}' before the keyword "
                            "arguments given")
        return out
    if not keywords:  # more positional arguments than any form: the type rule says so
        return []
    if not forms:
        raise TypeError(f"{name}() takes no keyword arguments")
    known = {k for form in forms for k in form}
    unknown = next((k for k in keywords if k not in known), None)
    accepted = " or ".join(f"({', '.join(f)})" for f in forms)
    what = f"an unexpected keyword argument '{unknown}'" if unknown else f"keyword arguments {sorted(keywords)} " \
        "that fit none of its forms"
    raise TypeError(f"{name}() got {what}; it takes {accepted}")
