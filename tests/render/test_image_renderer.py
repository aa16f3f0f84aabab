"""tilewarp.render.ImageRenderer: shapes land on the pixels the camera projects them to, in their colours."""
import importlib
import inspect
import sys

import numpy as np
import pytest

import tilewarp as wp
import tilewarp.render

Image = pytest.importorskip("PIL.Image")

from tilewarp.render import ImageRenderer

W, H = 160, 120
WHITE = (255, 255, 255)


def _rgb(color):
    return tuple(round(255 * c) for c in color)


def _pixel(image, xy):
    return image.getpixel((int(xy[0]), int(xy[1])))


def _top_view(tmp_path, **kwargs):
    """Orthographic, looking down -z at the origin, y up in the image."""
    return ImageRenderer(str(tmp_path / "top.png"), width=W, height=H, projection="orthographic",
                         camera_pos=(0, 0, 10), camera_target=(0, 0, 0), **kwargs)


def test_points_and_triangle_land_on_their_pixels(tmp_path):
    rng = np.random.default_rng(5)
    r = _top_view(tmp_path)
    tri_color, point_colors = rng.uniform(0.1, 0.9, 3), rng.uniform(0.1, 0.9, (3, 3))
    triangle = np.array([[-2.0, -1.0, 0.0], [-0.5, -1.0, 0.0], [-1.2, 1.2, 0.0]])
    triangle[:, 0] += rng.uniform(-0.2, 0.2)
    points = np.array([[1.0, -1.0, 1.0], [1.5, 0.0, 1.0], [1.0, 1.0, 1.0]]) + rng.uniform(-0.1, 0.1, (3, 3))
    r.begin_frame(0.0)
    indices = wp.array([0, 1, 2], dtype=wp.int32, device="cpu")
    r.render_mesh("tri", wp.array(triangle, dtype=wp.vec3, device="cpu"), indices, colors=tri_color)
    r.render_points("pts", points.tolist(), 0.1, colors=point_colors)
    image = r.end_frame()
    assert r.save() is True
    with Image.open(tmp_path / "top.png") as saved:
        assert saved.size == (W, H) and saved.convert("RGB").getpixel((3, 3)) == WHITE

    # the face looks straight at the camera, so its shading keeps its colour exactly
    centroid = r.camera.project(triangle.mean(axis=0, keepdims=True))[0]
    assert _pixel(image, centroid) == _rgb(tri_color)
    for p, c in zip(r.camera.project(points), point_colors, strict=True):
        assert _pixel(image, p) == _rgb(c)
    # the camera's target is the image centre; +x is right, +y is up
    assert np.allclose(r.camera.project([[0, 0, 0]])[0, :2], (W / 2, H / 2))
    px = r.camera.project(points)
    assert px[0, 0] < px[1, 0] and px[2, 1] < px[0, 1]
    for corner in ((0, 0), (W - 1, 0), (0, H - 1), (W - 1, H - 1)):
        assert image.getpixel(corner) == WHITE


def test_nearer_shapes_cover_farther_ones(tmp_path):
    rng = np.random.default_rng(9)
    r = _top_view(tmp_path, background=(0, 0, 0))
    near, far, plane = rng.uniform(0.2, 0.8, (3, 3))
    r.begin_frame(0.0)
    r.render_points("near", [(0.0, 0.0, 2.0)], 0.3, colors=near)  # rendered first, drawn last
    r.render_points("far", [(0.1, 0.0, -1.0), (1.5, 0.0, -1.0)], 0.6, colors=far)
    r.render_mesh("plane", [(-3, -3, 0.0), (3, -3, 0.0), (0, 3, 0.0)], [0, 1, 2], colors=plane)
    r.render_box("ignored", (0, 0, 0), (0, 0, 0, 1), (1, 1, 1), visible=False)
    image = r.end_frame()
    centre, far_point = r.camera.project([(0, 0, 0), (1.5, 0, 0)])
    assert _pixel(image, centre) == _rgb(near)
    assert _pixel(image, far_point) == _rgb(plane)  # the far disc is under the triangle
    assert "ignored" not in r._shapes


def test_up_axis_points_up_in_the_image(tmp_path):
    rng = np.random.default_rng(2)
    for up in ("Y", "Z"):
        r = ImageRenderer(str(tmp_path / f"{up}.png"), width=W, height=H, up_axis=up)
        low, high = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)
        high["XYZ".index(up)] = low["XYZ".index(up)] + 3.0
        r.render_ground()
        r.begin_frame(0.0)
        r.render_points("pts", [low, high], 0.05, colors=[(1, 0, 0), (0, 0, 1)])
        image = r.end_frame()
        (lx, ly, _), (hx, hy, _) = r.camera.project([low, high])
        assert hy < ly  # higher in the world, higher in the image (smaller row)
        assert _pixel(image, (lx, ly)) == (255, 0, 0) and _pixel(image, (hx, hy)) == (0, 0, 255)
        assert all(0 <= x < W and 0 <= y < H for x, y in ((lx, ly), (hx, hy)))  # the camera frames both
        assert image.getpixel((W // 2, H - 2)) != WHITE  # the ground fills the bottom of the view


def test_shapes_perspective_and_frames_dir(tmp_path):
    rng = np.random.default_rng(4)
    frames = tmp_path / "frames"
    r = ImageRenderer(str(tmp_path / "last.png"), width=W, height=H, up_axis="Z", frames_dir=str(frames))
    offsets = {"box": (-3, 0, 0), "capsule": (0, 0, 0), "cylinder": (3, 0, 0), "cone": (0, 3, 0),
               "arrow": (0, -3, 0)}
    colors = {name: np.eye(3)[k % 3] * 0.8 + 0.1 for k, name in enumerate(offsets)}
    for frame in range(3):
        r.begin_frame(frame / 60)
        shift = rng.uniform(-0.2, 0.2, 3)
        rot = (0.0, 0.0, 0.0, 1.0)
        r.render_box("box", offsets["box"] + shift, rot, (0.5, 0.5, 0.5), color=colors["box"])
        for name in ("capsule", "cylinder", "cone"):
            render = getattr(r, f"render_{name}")
            render(name, offsets[name] + shift, rot, 0.5, 0.5, up_axis=2, color=colors[name])
        r.render_arrow("arrow", offsets["arrow"] + shift, rot, 0.2, 0.6, up_axis=2, color=colors["arrow"])
        r.render_line_strip("strip", rng.random((5, 3)), color=(0, 0, 0), radius=0.05)
        image = r.end_frame()
    assert sorted(p.name for p in frames.iterdir()) == [f"frame_{k:05d}.png" for k in range(3)]
    for name, offset in offsets.items():  # the shape's own colour, shaded, covers its centre
        centre = np.asarray(offset) + shift + (0, 0, 0.3 if name == "arrow" else 0.0)
        pixel = np.array(_pixel(image, r.camera.project([centre])[0]))
        dominant = int(np.argmax(colors[name]))
        assert pixel[dominant] > 1.5 * max(np.delete(pixel, dominant)), (name, pixel)
    r.save()
    with Image.open(tmp_path / "last.png") as saved, Image.open(frames / "frame_00002.png") as last:
        assert saved.size == (W, H) and np.array_equal(np.asarray(saved), np.asarray(last))


def test_clear_error_without_pillow_and_lazy_imports(monkeypatch, tmp_path):
    for name in ("pxr", "PIL", "PIL.Image", "PIL.ImageDraw"):
        monkeypatch.setitem(sys.modules, name, None)  # imports of them now raise ImportError
    for name in [m for m in sys.modules if m.startswith("tilewarp.render")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delattr(tilewarp, "render")
    fresh = importlib.import_module("tilewarp.render")  # importing needs neither extra
    with pytest.raises(ImportError, match=r'pip install "tilewarp\[image\]"'):
        fresh.ImageRenderer(str(tmp_path / "x.png"))
    with pytest.raises(ImportError, match=r'pip install "tilewarp\[usd\]"'):
        fresh.UsdRenderer(str(tmp_path / "x.usda"))


def test_drawing_methods_take_warps_arguments():
    warp_render = pytest.importorskip("warp.render")
    theirs = warp_render.UsdRenderer
    names = [n for n in dir(ImageRenderer) if n.startswith("render_") or n in ("begin_frame", "end_frame")]
    assert len(names) == 14
    def parameters(f):
        return [(p.name, p.default) for p in inspect.signature(f).parameters.values()]

    for name in names:
        assert parameters(getattr(ImageRenderer, name)) == parameters(getattr(theirs, name)), name
