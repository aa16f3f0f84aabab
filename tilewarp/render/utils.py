"""Helpers shared by the renderers: input conversion, rotations, colours."""
from __future__ import annotations

import zlib

import numpy as np

AXES = "XYZ"
Color = tuple[float, float, float]  # RGB in [0, 1]

# distinct, readable colours for shapes rendered without one (picked by name, so stable across frames)
PALETTE = ((0.122, 0.467, 0.706), (1.0, 0.498, 0.055), (0.173, 0.627, 0.173), (0.839, 0.153, 0.157),
           (0.580, 0.404, 0.741), (0.549, 0.337, 0.294), (0.890, 0.467, 0.761), (0.737, 0.741, 0.133),
           (0.090, 0.745, 0.812))


def to_numpy(x, dtype=np.float32, width: int | None = None) -> np.ndarray:
    """Any array-like (tilewarp/Warp array on any device, numpy array, list, vector) as a numpy array;
    ``width`` reshapes to rows of that many components (vec3 arrays come back as (n, 3))."""
    if hasattr(x, "numpy"):  # tilewarp / Warp / torch arrays: copies device memory to the host
        x = x.numpy()
    a = np.asarray(x, dtype=dtype)
    return a.reshape(-1, width) if width else a


def axis_index(axis) -> int:
    """An axis given as 0/1/2 or "X"/"Y"/"Z" (any case) as its index."""
    if isinstance(axis, str):
        if axis.upper() not in AXES or len(axis) != 1:
            raise ValueError(f"up axis must be 'X', 'Y' or 'Z', got {axis!r}")
        return AXES.index(axis.upper())
    if int(axis) not in (0, 1, 2):
        raise ValueError(f"up axis must be 0, 1 or 2, got {axis!r}")
    return int(axis)


def quat_to_matrix(q) -> np.ndarray:
    """Rotation matrix of a Warp quaternion (x, y, z, w); normalised, so slightly-off inputs are fine."""
    q = to_numpy(q, np.float64).ravel()
    x, y, z, w = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def quats_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per-row shortest-arc quaternions (x, y, z, w) turning unit vectors ``a`` onto unit vectors ``b``."""
    a, b = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64))
    q = np.concatenate([np.cross(a, b), 1.0 + np.sum(a * b, axis=-1, keepdims=True)], axis=-1)
    opposite = q[..., 3] < 1e-9  # half-turn: any axis perpendicular to a will do
    if np.any(opposite):
        side = np.where(np.abs(a[opposite, :1]) < 0.9, [[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]])
        q[opposite] = np.concatenate([np.cross(a[opposite], side), np.zeros((side.shape[0], 1))], axis=-1)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def default_color(name: str) -> tuple:
    return PALETTE[zlib.crc32(name.encode()) % len(PALETTE)]


def colors_array(colors, count: int | None = None) -> np.ndarray:
    """Colours as a float (k, 3) array in [0, 1]: k == 1 for one colour, else one per element.
    Alpha channels are dropped; uint8 colours (0-255) are rescaled, other numbers taken as 0-1."""
    a = to_numpy(colors, None)
    a = a.astype(np.float32) / 255.0 if a.dtype == np.uint8 else a.astype(np.float32)
    a = a.reshape(1, -1) if a.ndim == 1 else a.reshape(len(a), -1)
    if a.shape[1] not in (3, 4):
        raise ValueError(f"colours need 3 (RGB) or 4 (RGBA) components, got shape {a.shape}")
    if count is not None and len(a) not in (1, count):
        raise ValueError(f"expected one colour or {count}, got {len(a)}")
    return a[:, :3]


def arrow_cap(base_radius, cap_radius=None, cap_height=None) -> tuple[float, float]:
    """An arrow head's radius and height; unset, twice the shaft's radius and twice as long as wide."""
    cap_radius = 2.0 * float(base_radius) if cap_radius is None else float(cap_radius)
    return cap_radius, 2.0 * cap_radius if cap_height is None else float(cap_height)


def segments(vertices, indices=None) -> tuple[np.ndarray, np.ndarray]:
    """Start and end points of a line list (pairs of ``indices``) or, without indices, of a line strip."""
    v = to_numpy(vertices, np.float64, 3)
    if indices is None:
        return v[:-1], v[1:]
    i = to_numpy(indices, np.int64).reshape(-1, 2)
    return v[i[:, 0]], v[i[:, 1]]
