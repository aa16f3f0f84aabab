"""tilewarp.render.UsdRenderer: frames written as time samples that read back as the data given."""
import importlib
import inspect
import sys

import numpy as np
import pytest

import tilewarp as wp
import tilewarp.render

pxr = pytest.importorskip("pxr")
from pxr import Gf, Usd, UsdGeom

from tilewarp.render import UsdRenderer

FPS = 30
TIMES = [0.5 + k / FPS for k in range(3)]  # time codes 15, 16, 17

CONVERTERS = {
    "tilewarp": lambda a, dtype: wp.array(a, dtype=dtype, device="cpu"),
    "numpy": lambda a, dtype: np.asarray(a),
    "list": lambda a, dtype: np.asarray(a).tolist(),
}


def _rotate(q, v):
    """Rotate v by the USD quaternion q."""
    return np.array(Gf.Rotation(q).TransformDir(Gf.Vec3d(*v)))


def _frame_data(rng):
    n = 7
    grid = np.array([[i, j, 0.0] for i in range(3) for j in range(3)])
    quads = [(3 * i + j, 3 * i + j + 1, 3 * i + j + 4, 3 * i + j + 3) for i in range(2) for j in range(2)]
    rot = rng.normal(size=4)
    return {
        "points": rng.random((n, 3)).astype(np.float32), "radii": rng.uniform(0.01, 0.1, n),
        "colors": rng.random((n, 3)).astype(np.float32), "dots": rng.random((5, 3)).astype(np.float32),
        "verts": (grid + 0.1 * rng.random((9, 3))).astype(np.float32),
        "tris": np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))], np.int32).ravel(),
        "pos": rng.normal(size=3), "rot": rot / np.linalg.norm(rot), "radius": rng.uniform(0.1, 1.0),
        "half_height": rng.uniform(0.1, 1.0), "extents": rng.uniform(0.1, 1.0, 3),
        "lines": rng.random((6, 3)).astype(np.float32), "line_indices": np.arange(6, dtype=np.int32),
        "color": tuple(rng.random(3))}


def _render_frame(r, d, conv):
    r.render_points("particles", conv(d["points"], wp.vec3), conv(d["radii"], wp.float32),
                    colors=conv(d["colors"], wp.vec3))
    r.render_points("dots", conv(d["dots"], wp.vec3), 0.05, colors=(1, 0, 0), as_spheres=False)
    r.render_mesh("cloth", conv(d["verts"], wp.vec3), conv(d["tris"], wp.int32), colors=d["color"],
                  pos=d["pos"], rot=d["rot"])
    r.render_sphere("sphere", d["pos"], d["rot"], d["radius"], color=d["color"])
    r.render_box("box", d["pos"], d["rot"], tuple(d["extents"]), color=d["color"])
    for kind in ("capsule", "cylinder", "cone"):
        getattr(r, f"render_{kind}")(kind, d["pos"], d["rot"], d["radius"], d["half_height"], up_axis=0,
                                     color=d["color"])
    r.render_line_list("springs", conv(d["lines"], wp.vec3), conv(d["line_indices"], wp.int32),
                       color=d["color"], radius=0.02)
    r.render_line_strip("path", conv(d["lines"], wp.vec3), color=d["color"], radius=0.03)
    r.render_arrow("arrow", d["pos"], d["rot"], 0.05, d["half_height"], up_axis=2, color=d["color"])


def _check_shapes(stage, d, code):
    t = Usd.TimeCode(code)
    inst = UsdGeom.PointInstancer.Get(stage, "/root/particles")
    assert np.allclose(np.array(inst.GetPositionsAttr().Get(t)), d["points"])
    assert np.allclose(np.array(inst.GetScalesAttr().Get(t)), np.repeat(d["radii"][:, None], 3, 1))
    assert len(inst.GetProtoIndicesAttr().Get(t)) == len(d["points"])
    color = UsdGeom.PrimvarsAPI(inst.GetPrim()).GetPrimvar("displayColor")
    assert color.GetInterpolation() == "vertex" and np.allclose(np.array(color.Get(t)), d["colors"])
    assert stage.GetPrimAtPath(inst.GetPrototypesRel().GetTargets()[0]).IsA(UsdGeom.Sphere)

    dots = UsdGeom.Points.Get(stage, "/root/dots")
    assert np.allclose(np.array(dots.GetPointsAttr().Get(t)), d["dots"])
    assert np.allclose(np.array(dots.GetWidthsAttr().Get(t)), 0.1)
    assert np.allclose(np.array(dots.GetDisplayColorAttr().Get(t)), [[1, 0, 0]])

    mesh = UsdGeom.Mesh.Get(stage, "/root/cloth")
    assert np.allclose(np.array(mesh.GetPointsAttr().Get(t)), d["verts"])
    assert list(mesh.GetFaceVertexIndicesAttr().Get(t)) == d["tris"].tolist()
    assert list(mesh.GetFaceVertexCountsAttr().Get(t)) == [3] * (len(d["tris"]) // 3)
    assert np.allclose(np.array(mesh.GetDisplayColorAttr().Get(t)), [d["color"]])
    world = np.array(mesh.ComputeLocalToWorldTransform(t)).T  # column vectors; includes /root's scale 2
    local = np.array(mesh.GetLocalTransformation(t)).T
    assert np.allclose(local[:3, 3], d["pos"], atol=1e-6)
    assert np.allclose(world, np.diag([2, 2, 2, 1]) @ local)
    x, y, z, w = d["rot"]
    assert np.allclose(local[:3, :3] @ [1, 0, 0], _rotate(Gf.Quatd(w, x, y, z), [1, 0, 0]), atol=1e-5)

    assert UsdGeom.Sphere.Get(stage, "/root/sphere").GetRadiusAttr().Get(t) == pytest.approx(d["radius"])
    box = UsdGeom.Cube.Get(stage, "/root/box")
    half_size = 0.5 * box.GetSizeAttr().Get() * np.array(box.GetOrderedXformOps()[2].Get(t))  # size, scale op
    assert half_size == pytest.approx(d["extents"], rel=1e-6)
    for kind in ("capsule", "cylinder", "cone"):
        schema = getattr(UsdGeom, kind.capitalize())
        geom = schema.Get(stage, f"/root/{kind}")
        assert geom.GetAxisAttr().Get() == "X"
        assert geom.GetRadiusAttr().Get(t) == pytest.approx(d["radius"])
        assert geom.GetHeightAttr().Get(t) == pytest.approx(2 * d["half_height"])
        assert np.array(geom.GetDisplayColorAttr().Get(t)) == pytest.approx(np.array([d["color"]]), rel=1e-6)

    starts, ends = d["lines"][0::2], d["lines"][1::2]
    springs = UsdGeom.PointInstancer.Get(stage, "/root/springs")
    assert np.allclose(np.array(springs.GetPositionsAttr().Get(t)), 0.5 * (starts + ends), atol=1e-6)
    lengths = np.linalg.norm(ends - starts, axis=1)
    assert np.allclose(np.array(springs.GetScalesAttr().Get(t))[:, 2], lengths, rtol=1e-5)
    for q, a, b in zip(springs.GetOrientationsAttr().Get(t), starts, ends, strict=True):  # half precision
        assert np.allclose(_rotate(Gf.Quatd(q), [0, 0, 1]), (b - a) / np.linalg.norm(b - a), atol=5e-3)
    strip = UsdGeom.PointInstancer.Get(stage, "/root/path")
    assert np.allclose(np.array(strip.GetPositionsAttr().Get(t)), 0.5 * (d["lines"][1:] + d["lines"][:-1]))
    cylinder = UsdGeom.Cylinder(stage.GetPrimAtPath(strip.GetPrototypesRel().GetTargets()[0]))
    assert cylinder.GetRadiusAttr().Get(t) == pytest.approx(0.03)

    shaft, head = UsdGeom.Cylinder.Get(stage, "/root/arrow/base"), UsdGeom.Cone.Get(stage, "/root/arrow/cap")
    assert shaft.GetAxisAttr().Get() == head.GetAxisAttr().Get() == "Z"
    assert shaft.GetHeightAttr().Get(t) == pytest.approx(d["half_height"])
    assert head.GetRadiusAttr().Get(t) == pytest.approx(0.1)  # twice the shaft's by default


@pytest.mark.parametrize("kind", list(CONVERTERS))
def test_frames_read_back_at_their_time_codes(tmp_path, kind):
    rng = np.random.default_rng(7 + len(kind))
    path = tmp_path / "scene.usda"
    r = UsdRenderer(str(path), up_axis="Z", fps=FPS, scaling=2.0)
    r.render_ground(size=5.0)
    frames = []
    for time in TIMES:
        frames.append(_frame_data(rng))
        r.begin_frame(time)
        _render_frame(r, frames[-1], lambda a, dtype: CONVERTERS[kind](a, dtype))
        r.end_frame()
    assert r.save() is True

    stage = Usd.Stage.Open(str(path))
    assert (stage.GetStartTimeCode(), stage.GetEndTimeCode()) == (15.0, 17.0)
    assert stage.GetTimeCodesPerSecond() == stage.GetFramesPerSecond() == FPS
    assert UsdGeom.GetStageUpAxis(stage) == "Z"
    assert stage.GetDefaultPrim().GetPath() == "/root"
    root_scale = UsdGeom.Xform.Get(stage, "/root").GetOrderedXformOps()[0].Get()
    assert np.array(root_scale) == pytest.approx([2, 2, 2])
    for code, d in zip((15, 16, 17), frames, strict=True):
        _check_shapes(stage, d, code)
    inst = UsdGeom.PointInstancer.Get(stage, "/root/particles")
    assert inst.GetPositionsAttr().GetTimeSamples() == [15.0, 16.0, 17.0]

    ground = UsdGeom.Mesh.Get(stage, "/root/ground")
    corners = np.array(ground.GetPointsAttr().Get())
    assert np.allclose(corners[:, 2], 0) and np.allclose(np.abs(corners[:, :2]), 5)
    normal = np.cross(corners[1] - corners[0], corners[2] - corners[1])
    assert normal[2] > 0  # the face winds counter-clockwise about +Z, the up axis


def test_in_memory_stage_defaults_and_visibility():
    stage = Usd.Stage.CreateInMemory()
    r = UsdRenderer(stage)
    rng = np.random.default_rng(3)
    for frame in range(4):
        r.begin_frame(frame / 60)  # frame / 60 * 60 need not be an integer in floating point: snapped
        r.render_points("p", rng.random((4, 3)), 0.1, visible=frame != 2)
        r.end_frame()
    assert UsdGeom.GetStageUpAxis(stage) == "Y" and stage.GetTimeCodesPerSecond() == 60
    assert (stage.GetStartTimeCode(), stage.GetEndTimeCode()) == (0.0, 3.0)
    visibility = UsdGeom.Imageable(stage.GetPrimAtPath("/root/p")).GetVisibilityAttr()
    assert visibility.GetTimeSamples() == [0.0, 1.0, 2.0, 3.0]
    assert [visibility.Get(t) for t in range(4)] == ["inherited", "inherited", "invisible", "inherited"]
    assert r.save() is False  # nothing to write an anonymous layer to


def test_topology_updates_only_when_asked():
    stage = Usd.Stage.CreateInMemory()
    r = UsdRenderer(stage)
    rng = np.random.default_rng(11)
    first, second = rng.permutation(6).astype(np.int32), rng.permutation(6).astype(np.int32)
    for frame, (indices, update) in enumerate([(first, False), (second, False), (second, True)]):
        r.begin_frame(frame / 60)
        r.render_mesh("m", rng.random((6, 3)), indices, colors=rng.random((6, 3)), update_topology=update)
    attr = UsdGeom.Mesh.Get(stage, "/root/m").GetFaceVertexIndicesAttr()
    assert [list(attr.Get(t)) for t in range(3)] == [first.tolist(), first.tolist(), second.tolist()]
    color = UsdGeom.PrimvarsAPI(stage.GetPrimAtPath("/root/m")).GetPrimvar("displayColor")
    assert color.GetInterpolation() == "vertex"


def test_bodies_templates_and_references(tmp_path):
    asset = tmp_path / "asset.usda"
    a = Usd.Stage.CreateNew(str(asset))
    UsdGeom.Sphere.Define(a, "/thing/ball")
    a.SetDefaultPrim(a.GetPrimAtPath("/thing"))
    a.Save()

    stage = Usd.Stage.CreateInMemory()
    r = UsdRenderer(stage, up_axis="Z")
    r.begin_frame(0.0)
    assert r.register_body("link") == "/root/link"
    assert r.render_box("b", (0, 0, 1), (0, 0, 0, 1), (1, 2, 3), parent_body="link") == "/root/link/b"
    template = r.render_capsule("cap", (0, 0, 0), (0, 0, 0, 1), 0.5, 1.0, is_template=True)
    assert stage.GetPrimAtPath(template).IsAbstract()  # a template is not drawn itself
    instance = r.add_shape_instance("cap_1", template, "link", (1, 2, 3), (0, 0, 0, 1), color1=(0, 1, 0))
    capsule = UsdGeom.Capsule(stage.GetPrimAtPath(instance))
    assert capsule and capsule.GetRadiusAttr().Get() == 0.5 and capsule.GetHeightAttr().Get() == 2.0
    assert np.allclose(np.array(capsule.GetLocalTransformation(0))[3, :3], [1, 2, 3])
    r.render_ref("robot", str(asset), (4, 5, 6), (0, 0, 0, 1), (1, 1, 1), color=(1, 0, 0))
    ball = UsdGeom.Sphere(stage.GetPrimAtPath("/root/robot/ball"))
    assert ball and np.allclose(np.array(ball.GetDisplayColorAttr().Get(0)), [[1, 0, 0]])
    assert [p.GetPath() for p in stage.Traverse() if p.IsA(UsdGeom.Capsule)] == ["/root/link/cap_1"]


def test_signatures_match_warp():
    warp_render = pytest.importorskip("warp.render")
    ours, theirs = tilewarp.render.UsdRenderer, warp_render.UsdRenderer
    names = [n for n in dir(theirs) if not n.startswith("_") and callable(getattr(theirs, n))] + ["__init__"]
    for name in names:
        expected = [(p.name, p.default) for p in inspect.signature(getattr(theirs, name)).parameters.values()]
        got = [(p.name, p.default) for p in inspect.signature(getattr(ours, name)).parameters.values()]
        assert got == expected, name


def test_clear_error_without_usd(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pxr", None)  # `from pxr import ...` now raises ImportError
    monkeypatch.delitem(sys.modules, "tilewarp.render.usd")
    monkeypatch.delattr(tilewarp.render, "usd")
    fresh = importlib.import_module("tilewarp.render.usd")  # importing still works ...
    with pytest.raises(ImportError, match=r'pip install "tilewarp\[usd\]"'):
        fresh.UsdRenderer(str(tmp_path / "x.usda"))  # ... using it says how to get USD
