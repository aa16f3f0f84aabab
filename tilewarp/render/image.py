"""``ImageRenderer``: PNG snapshots of a scene with the ``warp.render`` renderers' drawing API, on Pillow."""
from __future__ import annotations

import os

import numpy as np

from . import shapes
from .raster import Camera, Discs, Lines, Triangles, bounds, draw_scene
from .utils import Color, axis_index, colors_array, default_color, quat_to_matrix, segments, to_numpy

try:
    from PIL import Image, ImageDraw
except ImportError:  # Pillow is an optional extra: constructing an ImageRenderer says how to get it
    Image = None

MISSING_PILLOW = ('tilewarp.render.ImageRenderer needs Pillow (module "PIL"): pip install "tilewarp[image]"  '
                  '(or: pip install pillow)')
GROUND_COLOR = (0.82, 0.82, 0.8)


class ImageRenderer:
    """Draws frames into PNG images: points as depth-sorted discs, meshes and shapes as flat-shaded
    triangles (painter's algorithm), the ground behind everything.

    Shapes persist by name across frames, as in Warp's OpenGL renderer: rendering a name again replaces
    it. ``end_frame()`` draws the frame (and writes it to ``frames_dir`` when given); ``save()`` writes
    the last frame to ``path``.

    Args:
        path: where ``save()`` writes the last frame.
        width, height: image size in pixels.
        up_axis: the world's up axis, ``"X"``, ``"Y"`` or ``"Z"``: up in the image.
        fps, scaling: as for ``UsdRenderer`` (``scaling`` multiplies all coordinates; ``fps`` is kept only
            so the two renderers are constructed alike).
        frames_dir: if given, ``end_frame()`` writes every frame there as ``frame_00000.png``, ...
        projection: ``"perspective"`` or ``"orthographic"``.
        fov: vertical field of view, in degrees, of the perspective projection.
        camera_pos, camera_target: fix the camera; by default it looks at the centre of the first drawn
            frame's bounds, from above and to the side, at a distance showing all of it. The camera stays
            fixed afterwards (set ``renderer.camera = None`` to fit it again at the next frame).
        background: the image's background colour (RGB in [0, 1]).
    """

    def __init__(self, path="render.png", *, width: int = 640, height: int = 480, up_axis="Y", fps: int = 60,
                 scaling: float = 1.0, frames_dir=None, projection: str = "perspective", fov: float = 45.0,
                 camera_pos=None, camera_target=None, background=(1.0, 1.0, 1.0)):
        if Image is None:
            raise ImportError(MISSING_PILLOW)
        if projection not in ("perspective", "orthographic"):
            raise ValueError(f"projection must be 'perspective' or 'orthographic', got {projection!r}")
        self.path, self.frames_dir = path, frames_dir
        self.width, self.height = int(width), int(height)
        self.up_axis = axis_index(up_axis)
        self.fps, self.scaling = fps, float(scaling)
        self.projection, self.fov = projection, float(fov)
        self.camera_pos, self.camera_target = camera_pos, camera_target
        self.background = tuple(colors_array(background)[0])
        self.camera: Camera | None = None
        self.image = None  # the last frame drawn, a PIL image
        self.time = 0.0
        self.frame = 0  # frames drawn so far
        self._shapes: dict[str, list] = {}  # name -> primitives
        self._ground: list = []

    # ---- frames ---------------------------------------------------------------------------------

    def begin_frame(self, time):
        """Start a frame at ``time`` seconds."""
        self.time = time

    def end_frame(self):
        """Draw the frame (into ``self.image``, and ``frames_dir`` when given); returns the image."""
        primitives = [p for prims in self._shapes.values() for p in prims]
        if self.camera is None:
            box = bounds(primitives) or bounds(self._ground) or (np.full(3, -1.0), np.full(3, 1.0))
            self.camera = Camera.fit(*box, self.up_axis, self.width, self.height, self.projection, self.fov,
                                     self.camera_pos, self.camera_target)
        background = tuple(round(255 * c) for c in self.background)
        self.image = Image.new("RGB", (self.width, self.height), background)
        draw_scene(self.camera, primitives, ImageDraw.Draw(self.image), self._ground)
        if self.frames_dir is not None:
            os.makedirs(self.frames_dir, exist_ok=True)
            self.image.save(os.path.join(self.frames_dir, f"frame_{self.frame:05d}.png"))
        self.frame += 1
        return self.image

    def save(self, path=None) -> bool:
        """Write the last frame (drawing the current scene if no frame was ended yet) to ``path``,
        by default the constructor's; returns True."""
        if self.image is None:
            self.end_frame()
        self.image.save(os.fspath(path if path is not None else self.path))
        return True

    # ---- helpers --------------------------------------------------------------------------------

    def _set(self, name, primitives, visible=True):
        if visible:
            self._shapes[str(name)] = primitives
        else:
            self._shapes.pop(str(name), None)
        return str(name)

    def _mesh(self, vertices, triangles, colors, name, pos=(0, 0, 0), rot=(0, 0, 0, 1), scale=(1, 1, 1)):
        """World-space triangles of a local mesh, one colour per triangle."""
        v = to_numpy(vertices, np.float64, 3) * to_numpy(scale, np.float64).ravel()
        v = (v @ quat_to_matrix(rot).T + to_numpy(pos, np.float64).ravel()) * self.scaling
        t = to_numpy(triangles, np.int64, 3)
        c = colors_array(default_color(name) if colors is None else colors)
        if len(c) == len(v):  # per vertex: each triangle takes its corners' mean
            c = c[t].mean(axis=1)
        elif len(c) != len(t):
            c = np.broadcast_to(c[:1], (len(t), 3))
        return Triangles(v, t, c)

    def _shape(self, name, mesh, pos, rot, color, visible, scale=(1, 1, 1)):
        return self._set(name, [self._mesh(*mesh, color, name, pos, rot, scale)], visible)

    # ---- points, meshes, lines ------------------------------------------------------------------

    def render_points(self, name: str, points, radius, colors=None, as_spheres: bool = True,
                      visible: bool = True):
        """Points as discs of ``radius`` (one, or one per point); ``colors`` one colour or one per point."""
        p = to_numpy(points, np.float64, 3) * self.scaling
        r = np.broadcast_to(to_numpy(radius, np.float64).ravel(), (len(p),)) * self.scaling
        c = colors_array(default_color(name) if colors is None else colors, len(p))
        return self._set(name, [Discs(p, r, np.broadcast_to(c, (len(p), 3)))], visible)

    def render_mesh(self, name: str, points, indices, colors=None, pos=(0.0, 0.0, 0.0),
                    rot=(0.0, 0.0, 0.0, 1.0), scale=(1.0, 1.0, 1.0), update_topology=False,
                    parent_body: str | None = None, is_template: bool = False, smooth_shading: bool = True,
                    visible: bool = True):
        """A triangle mesh, flat-shaded; ``colors`` is one colour, or one per vertex or per triangle."""
        return self._set(name, [self._mesh(points, indices, colors, name, pos, rot, scale)], visible)

    def render_line_list(self, name: str, vertices, indices, color: Color | None = None,
                         radius: float = 0.01, visible: bool = True):
        """Segments between ``vertices[indices[2k]]`` and ``vertices[indices[2k + 1]]``."""
        a, b = segments(vertices, indices)
        c = colors_array(default_color(name) if color is None else color)[0]
        return self._set(name, [Lines(a * self.scaling, b * self.scaling, radius * self.scaling, c)], visible)

    def render_line_strip(self, name: str, vertices, color: Color | None = None,
                          radius: float = 0.01, visible: bool = True):
        """A polyline through ``vertices``."""
        a, b = segments(vertices)
        c = colors_array(default_color(name) if color is None else color)[0]
        return self._set(name, [Lines(a * self.scaling, b * self.scaling, radius * self.scaling, c)], visible)

    # ---- analytic shapes ------------------------------------------------------------------------

    def render_sphere(self, name: str, pos: tuple, rot: tuple, radius: float, parent_body: str | None = None,
                      is_template: bool = False, color: Color | None = None,
                      visible: bool = True):
        """A sphere, drawn as a disc."""
        return self.render_points(name, [pos], radius, color, visible=visible)

    def render_box(self, name: str, pos: tuple, rot: tuple, extents: tuple, parent_body: str | None = None,
                   is_template: bool = False, color: Color | None = None, visible: bool = True):
        """A box of half-extents ``extents``."""
        return self._shape(name, shapes.box(extents), pos, rot, color, visible)

    def render_capsule(self, name: str, pos: tuple, rot: tuple, radius: float, half_height: float,
                       parent_body: str | None = None, is_template: bool = False, up_axis: int = 1,
                       color: Color | None = None, visible: bool = True):
        """A capsule along axis ``up_axis``."""
        return self._shape(name, shapes.capsule(radius, half_height, up_axis), pos, rot, color, visible)

    def render_cylinder(self, name: str, pos: tuple, rot: tuple, radius: float, half_height: float,
                        parent_body: str | None = None, is_template: bool = False, up_axis: int = 1,
                        color: Color | None = None, visible: bool = True):
        """A cylinder along axis ``up_axis``."""
        return self._shape(name, shapes.cylinder(radius, half_height, up_axis), pos, rot, color, visible)

    def render_cone(self, name: str, pos: tuple, rot: tuple, radius: float, half_height: float,
                    parent_body: str | None = None, is_template: bool = False, up_axis: int = 1,
                    color: Color | None = None, visible: bool = True):
        """A cone along axis ``up_axis``, apex towards +axis."""
        return self._shape(name, shapes.cone(radius, half_height, up_axis), pos, rot, color, visible)

    def render_arrow(self, name: str, pos: tuple, rot: tuple, base_radius: float, base_height: float,
                     cap_radius: float | None = None, cap_height: float | None = None,
                     parent_body: str | None = None, is_template: bool = False, up_axis: int = 1,
                     color: Color | None = None, visible: bool = True):
        """An arrow from ``pos`` along axis ``up_axis`` (head defaults as in ``UsdRenderer.render_arrow``)."""
        mesh = shapes.arrow(base_radius, base_height, cap_radius, cap_height, up_axis)
        return self._shape(name, mesh, pos, rot, color, visible)

    def render_plane(self, name: str, pos: tuple, rot: tuple, width: float, length: float,
                     color: Color = (1.0, 1.0, 1.0), color2=None, parent_body: str | None = None,
                     is_template: bool = False, u_scaling: float = 1.0, v_scaling: float = 1.0,
                     visible: bool = True):
        """A ``2 * width`` by ``2 * length`` rectangle in its local x-z plane (``color2`` is ignored)."""
        return self._shape(name, shapes.plane(width, length), pos, rot, color, visible)

    def render_ground(self, size: float = 100.0, plane=None):
        """A square ground of half-size ``size`` perpendicular to the up axis through the origin, or in
        ``plane = (nx, ny, nz, d)`` (``dot(n, x) == d``); always drawn behind everything else."""
        normal = np.eye(3)[self.up_axis] if plane is None else to_numpy(plane, np.float64)[:3]
        normal = normal / np.linalg.norm(normal)
        u = np.cross(normal, [1.0, 0.0, 0.0] if abs(normal[0]) < 0.9 else [0.0, 1.0, 0.0])
        u /= np.linalg.norm(u)
        v = np.cross(normal, u)
        center = normal * (0.0 if plane is None else float(plane[3]))
        corners = center + float(size) * np.array([-u - v, u - v, u + v, -u + v])
        self._ground = [self._mesh(corners, [[0, 1, 2], [0, 2, 3]], GROUND_COLOR, "ground")]
        return "ground"

    def register_body(self, body_name):
        """Accepted for compatibility: shapes are drawn where their ``pos`` puts them."""
        return str(body_name)
