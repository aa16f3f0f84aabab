"""Triangle meshes of the analytic shapes, for renderers that only draw triangles.

Each function returns ``(vertices (n, 3), triangles (m, 3))`` in the shape's local frame. Round shapes
are surfaces of revolution (``lathe``) of a profile of (radius, height) pairs about an axis.
"""
from __future__ import annotations

import numpy as np

from .utils import arrow_cap, axis_index

SEGMENTS = 24  # around the axis: smooth enough at image sizes, cheap to sort and draw


def lathe(profile, axis=1, segments: int = SEGMENTS) -> tuple[np.ndarray, np.ndarray]:
    """Revolve ``profile`` ((radius, height) pairs, bottom to top) about ``axis``."""
    profile = np.asarray(profile, np.float64)
    axis = axis_index(axis)
    e_axis, e_a, e_b = np.eye(3)[axis], np.eye(3)[(axis + 1) % 3], np.eye(3)[(axis + 2) % 3]
    theta = np.linspace(0.0, 2.0 * np.pi, segments, endpoint=False)
    ring = np.cos(theta)[:, None] * e_a + np.sin(theta)[:, None] * e_b  # (segments, 3) unit directions
    vertices = (profile[:, :1, None] * ring[None] + profile[:, 1:, None] * e_axis).reshape(-1, 3)
    k, j = np.meshgrid(np.arange(len(profile) - 1), np.arange(segments), indexing="ij")
    a, b = k * segments + j, k * segments + (j + 1) % segments  # quad corners on ring k, then ring k + 1
    c, d = a + segments, b + segments
    triangles = np.concatenate([np.stack([a, b, d], -1), np.stack([a, d, c], -1)]).reshape(-1, 3)
    return vertices, triangles


def _arc(radius, center, start, stop, steps=8):
    """Profile points of a circle arc (angles from the equator, towards +axis)."""
    angles = np.linspace(start, stop, steps)
    return np.stack([radius * np.cos(angles), center + radius * np.sin(angles)], axis=1)


def sphere(radius):
    return lathe(_arc(radius, 0.0, -np.pi / 2, np.pi / 2, 12), axis=1)


def capsule(radius, half_height, axis=1):
    bottom = _arc(radius, -half_height, -np.pi / 2, 0.0)
    top = _arc(radius, half_height, 0.0, np.pi / 2)
    return lathe(np.concatenate([bottom, top]), axis)


def cylinder(radius, half_height, axis=1):
    h = half_height
    return lathe([(0.0, -h), (radius, -h), (radius, h), (0.0, h)], axis)


def cone(radius, half_height, axis=1):
    h = half_height
    return lathe([(0.0, -h), (radius, -h), (0.0, h)], axis)


def arrow(base_radius, base_height, cap_radius=None, cap_height=None, axis=1):
    """Shaft from the origin along +axis, then the head."""
    cap_radius, cap_height = arrow_cap(base_radius, cap_radius, cap_height)
    return lathe([(0.0, 0.0), (base_radius, 0.0), (base_radius, base_height), (cap_radius, base_height),
                  (0.0, base_height + cap_height)], axis)


def box(extents):
    """A box of half-extents ``extents``."""
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], np.float64)
    faces = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    triangles = [t for a, b, c, d in faces for t in ((a, b, c), (a, c, d))]
    return corners * np.asarray(extents, np.float64), np.array(triangles)


def plane(width, length):
    """A rectangle in the local x-z plane, ``2 * width`` by ``2 * length``."""
    w, h = width, length
    corners = np.array([[-w, 0, -h], [-w, 0, h], [w, 0, h], [w, 0, -h]], np.float64)
    return corners, np.array([[0, 1, 2], [0, 2, 3]])
