"""A small camera and painter's-algorithm rasteriser on Pillow's ``ImageDraw``.

Everything drawn is a primitive in world space: triangles (flat-shaded), discs (points, spheres) or
line segments. Primitives are sorted far to near by their depth along the view direction and painted
in that order; polygons crossing the near plane are clipped to it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# shading = AMBIENT + (1 - AMBIENT) * |cos| to a headlight, so faces seen head-on keep their exact colour
AMBIENT = 0.35


def _unit(v) -> np.ndarray:
    v = np.asarray(v, np.float64)
    return v / np.linalg.norm(v)


class Camera:
    """A camera at ``pos`` looking at ``target`` with ``up`` towards the top of the image.

    ``projection`` is ``"perspective"`` (vertical field of view ``fov`` degrees) or ``"orthographic"``
    (``ortho_height`` world units seen from the bottom to the top of the image)."""

    def __init__(self, pos, target, up, width: int, height: int, projection="perspective", fov=45.0,
                 ortho_height=1.0):
        if projection not in ("perspective", "orthographic"):
            raise ValueError(f"projection must be 'perspective' or 'orthographic', got {projection!r}")
        self.pos, self.target = np.asarray(pos, np.float64), np.asarray(target, np.float64)
        self.forward = _unit(self.target - self.pos)
        side = np.cross(self.forward, up)
        if np.linalg.norm(side) < 1e-9:  # looking along the up axis: any sideways direction will do
            side = np.cross(self.forward, np.roll(up, 1))
        self.right = _unit(side)
        self.up = np.cross(self.right, self.forward)
        self.width, self.height, self.projection = width, height, projection
        self.fov, self.ortho_height = fov, ortho_height
        self.near = 1e-3 * np.linalg.norm(self.target - self.pos)

    @classmethod
    def fit(cls, lo, hi, up_axis: int, width, height, projection="perspective", fov=45.0, pos=None,
            target=None):
        """A camera showing the box ``lo``-``hi``: from ``pos`` if given, else from above and to the side,
        just far enough for the whole box to fit in the image."""
        lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
        center = 0.5 * (lo + hi) if target is None else np.asarray(target, np.float64)
        up = np.eye(3)[up_axis]
        # in front (+z for y up, -y for z up, as in usdview and Blender), raised, a little to the right (+x)
        front = np.array([(0.0, 0.0, 1.0), (0.0, 0.0, 1.0), (0.0, -1.0, 0.0)][up_axis])
        direction = front + 0.8 * up + 0.5 * np.cross(-front, up)
        eye = center + _unit(direction if pos is None else np.asarray(pos, np.float64) - center)
        corners = cls(eye, center, up, width, height).view(
            [[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
        corners[:, 2] -= 1.0  # depth relative to the centre
        tan_v = np.tan(0.5 * np.radians(fov))
        # the closest distance at which every corner projects inside the image, plus a margin
        needed = np.maximum(np.abs(corners[:, 0]) / (tan_v * width / height), np.abs(corners[:, 1]) / tan_v)
        distance = 1.1 * max(float(np.max(needed - corners[:, 2])), float(np.max(-corners[:, 2])), 1e-6)
        if pos is None:
            depth_span = float(np.ptp(corners[:, 2]))
            distance += 0.0 if projection == "perspective" else depth_span  # nothing behind the camera
            pos = center + distance * (eye - center)
        half = max(np.max(np.abs(corners[:, 1])), np.max(np.abs(corners[:, 0])) * height / width, 1e-6)
        return cls(pos, center, up, width, height, projection, fov, ortho_height=2.2 * half)

    def view(self, points) -> np.ndarray:
        """Camera coordinates: (right, up, depth along the view direction)."""
        d = np.asarray(points, np.float64).reshape(-1, 3) - self.pos
        return np.stack([d @ self.right, d @ self.up, d @ self.forward], axis=-1)

    def scale(self, depth) -> np.ndarray:
        """Pixels per world unit at ``depth``."""
        if self.projection == "orthographic":
            return np.full(np.shape(depth), self.height / self.ortho_height)
        focal = 0.5 * self.height / np.tan(0.5 * np.radians(self.fov))
        return focal / np.maximum(depth, self.near)

    def to_pixels(self, view) -> np.ndarray:
        """Camera coordinates to pixel coordinates (x right, y down, origin at the top-left corner)."""
        s = self.scale(view[..., 2])
        return np.stack([0.5 * self.width + s * view[..., 0], 0.5 * self.height - s * view[..., 1]], axis=-1)

    def project(self, points) -> np.ndarray:
        """World points to (n, 3) rows of pixel x, pixel y and depth (distance along the view direction)."""
        v = self.view(points)
        return np.concatenate([self.to_pixels(v), v[:, 2:]], axis=1)


@dataclass
class Triangles:
    vertices: np.ndarray  # (n, 3) world space
    triangles: np.ndarray  # (m, 3) vertex indices
    colors: np.ndarray  # (m, 3) in [0, 1]


@dataclass
class Discs:
    centers: np.ndarray  # (n, 3)
    radii: np.ndarray  # (n,) world units
    colors: np.ndarray  # (n, 3)


@dataclass
class Lines:
    starts: np.ndarray  # (n, 3)
    ends: np.ndarray  # (n, 3)
    radius: float
    color: np.ndarray  # (3,)


def bounds(primitives) -> tuple[np.ndarray, np.ndarray] | None:
    """The world box around the primitives (discs with their radii), None when there are none."""
    boxes = []
    for p in primitives:
        if isinstance(p, Triangles) and len(p.vertices):
            boxes += [p.vertices.min(0), p.vertices.max(0)]
        elif isinstance(p, Discs) and len(p.centers):
            boxes += [(p.centers - p.radii[:, None]).min(0), (p.centers + p.radii[:, None]).max(0)]
        elif isinstance(p, Lines) and len(p.starts):
            boxes += [np.minimum(p.starts, p.ends).min(0), np.maximum(p.starts, p.ends).max(0)]
    return (np.min(boxes, axis=0), np.max(boxes, axis=0)) if boxes else None


def _rgb(color, shade=1.0) -> tuple:
    return tuple(round(255.0 * min(max(c * shade, 0.0), 1.0)) for c in color)


def _clip_near(polygon: np.ndarray, near: float) -> np.ndarray:
    """The part of a camera-space polygon in front of the near plane (Sutherland-Hodgman, one plane)."""
    out = []
    for a, b in zip(polygon, np.roll(polygon, -1, axis=0), strict=True):
        if a[2] >= near:
            out.append(a)
        if (a[2] >= near) != (b[2] >= near):
            out.append(a + (near - a[2]) / (b[2] - a[2]) * (b - a))
    return np.array(out).reshape(-1, 3)


def _triangle_items(camera: Camera, prim: Triangles, items: list, shaded=True):
    view = camera.view(prim.vertices)
    corners = view[prim.triangles]  # (m, 3 corners, 3)
    normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    lengths = np.linalg.norm(normals, axis=1)
    if camera.projection == "perspective":  # headlight: the direction from the face to the eye
        to_eye = -corners.mean(axis=1)
        norms = lengths * np.linalg.norm(to_eye, axis=1)
        cosine = np.abs(np.sum(normals * to_eye, axis=1)) / np.maximum(norms, 1e-30)
    else:
        cosine = np.abs(normals[:, 2]) / np.maximum(lengths, 1e-30)
    shade = AMBIENT + (1.0 - AMBIENT) * cosine if shaded else np.ones(len(corners))
    depth = corners[:, :, 2].mean(axis=1)
    in_front = corners[:, :, 2].min(axis=1) >= camera.near
    visible = (corners[:, :, 2].max(axis=1) >= camera.near) & (lengths > 1e-12 * np.max(lengths, initial=0.0))
    for k in np.flatnonzero(visible):  # degenerate triangles (lathe poles) would paint as dark lines
        polygon = corners[k] if in_front[k] else _clip_near(corners[k], camera.near)
        pixels = [tuple(p) for p in camera.to_pixels(polygon)]
        items.append((depth[k], "polygon", pixels, _rgb(prim.colors[k], shade[k])))


def draw_scene(camera: Camera, primitives, image_draw, background_primitives=()):
    """Paint ``background_primitives`` (e.g. the ground, unshaded) first, then ``primitives`` far to near."""
    for layer in (background_primitives, primitives):
        items = []
        for prim in layer:
            if isinstance(prim, Triangles):
                _triangle_items(camera, prim, items, shaded=layer is primitives)
            elif isinstance(prim, Discs):
                view = camera.view(prim.centers)
                pixels, size = camera.to_pixels(view), prim.radii * camera.scale(view[:, 2])
                for k in np.flatnonzero(view[:, 2] >= camera.near):
                    items.append((view[k, 2], "disc", (pixels[k], size[k]), _rgb(prim.colors[k])))
            elif isinstance(prim, Lines):
                a, b = camera.view(prim.starts), camera.view(prim.ends)
                for k in np.flatnonzero(np.minimum(a[:, 2], b[:, 2]) >= camera.near):
                    width = 2.0 * prim.radius * camera.scale(0.5 * (a[k, 2] + b[k, 2]))
                    ends = [tuple(p) for p in camera.to_pixels(np.stack([a[k], b[k]]))]
                    items.append((0.5 * (a[k, 2] + b[k, 2]), "line", (ends, width), _rgb(prim.color)))
        items.sort(key=lambda item: -item[0])
        for _, kind, shape, color in items:
            _paint(image_draw, kind, shape, color)


def _paint(image_draw, kind, shape, color):
    if kind == "polygon":
        image_draw.polygon(shape, fill=color, outline=color)  # the outline closes hairline gaps between faces
    elif kind == "disc":
        (x, y), r = shape
        r = max(float(r), 0.5)
        # a darker rim tells overlapping discs of one colour apart
        rim = tuple(int(0.7 * c) for c in color) if r >= 3.0 else None
        image_draw.ellipse([x - r, y - r, x + r, y + r], fill=color, outline=rim)
    else:
        ends, width = shape
        image_draw.line(ends, fill=color, width=max(1, round(width)))
