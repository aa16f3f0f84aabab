"""Tile linear algebra and FFT builtins (Warp's names): Cholesky, triangular and Cholesky solves,
their in-place forms, and the in-place FFT / inverse FFT along a tile's last dimension.

Every operand is a shared tile (each lane reads whole rows and columns); the C++ is
``native/tile/linalg.h`` and ``native/tile/fft.h``. ``fill_mode`` arrives in the template as
``upper`` (a bool). The forms that return a tile have adjoints (Warp has none for the solves);
the in-place solves and factorisation overwrite the value their gradient would need, so a gradient
through them raises, while the FFTs, being linear, take their gradient in place too.
"""
from __future__ import annotations

from ..language import types as T
from .registry import Builtin, fail
from .tile import _tile

_FLOATS = (T.float32, T.float64)


def _square(t, what):
    _tile(t, what)
    if len(t.shape) != 2 or t.shape[0] != t.shape[1]:
        fail(f"{what} must be a square 2-d tile, got shape {t.shape}")
    if t.dtype not in _FLOATS:
        fail(f"{what} must hold float32 or float64, got {T.type_name(t.dtype)}")


def _factor(args, template):
    (a,) = args
    _square(a, "A")
    return a


def _factor_inplace(args, template):
    _factor(args, template)
    return None


def _solve(args, template):
    f, y = args
    _square(f, "the matrix")
    _tile(y, "the right-hand side")
    if len(y.shape) not in (1, 2) or y.shape[0] != f.shape[0]:
        fail(f"the right-hand side must have shape ({f.shape[0]},) or ({f.shape[0]}, NRHS) for a "
             f"{f.shape[0]}x{f.shape[1]} matrix, got {y.shape}")
    if y.dtype is not f.dtype:
        fail(f"the matrix and the right-hand side must have one dtype, got {T.type_name(f.dtype)} and "
             f"{T.type_name(y.dtype)}")
    return y


def _solve_inplace(args, template):
    _solve(args, template)
    return None


def _fft(args, template):
    (t,) = args
    _tile(t, "inout")
    if not (T.is_vector(t.dtype) and t.dtype._wp_shape_ == (2,) and T.scalar_of(t.dtype) in _FLOATS):
        fail(f"transforms tiles of vec2f or vec2d (complex numbers as (real, imaginary)), got "
             f"{T.type_name(t.dtype)}")
    return None


def _mode(template) -> str:
    return "true" if template and template[0] else "false"


def _call(cpp, moded=False):
    return lambda a, t: f"{cpp}{'<' + _mode(t) + '>' if moded else ''}({', '.join(a)})"


def _adjoint(cpp, moded=False):
    """The result's adjoint is the routine's workspace (the reverse pass clears it afterwards)."""
    def emit(a, adj, adj_ret, t):
        mode = f"<{_mode(t)}>" if moded else ""
        operands = ", ".join(a[1:])
        return f"{cpp}{mode}({a[0]}, {operands}, {', '.join(adj[1:])}, {adj_ret})"
    return emit


def linalg_entries() -> list:
    E = []
    add = E.append
    add(Builtin("tile_cholesky", _factor, "tw::tile_cholesky", emit=_call("tw::tile_cholesky", True),
                adjoint_emit=lambda a, adj, r, t: f"tw::adj_tile_cholesky<{_mode(t)}>({a[0]}, {adj[1]}, {r})"))
    add(Builtin("tile_cholesky_solve", _solve, "tw::tile_cholesky_solve", emit=_call("tw::tile_cholesky_solve", True),
                adjoint_emit=_adjoint("tw::adj_tile_cholesky_solve", True)))
    for name in ("tile_lower_solve", "tile_upper_solve"):
        add(Builtin(name, _solve, f"tw::{name}", emit=_call(f"tw::{name}"), adjoint_emit=_adjoint(f"tw::adj_{name}")))
    for name, rule, moded in (("tile_cholesky_inplace", _factor_inplace, True),
                              ("tile_cholesky_solve_inplace", _solve_inplace, True),
                              ("tile_lower_solve_inplace", _solve_inplace, False),
                              ("tile_upper_solve_inplace", _solve_inplace, False)):
        add(Builtin(name, rule, f"tw::{name}", side_effect=True, differentiable=False, undefined_gradient=True,
                    emit=_call(f"tw::{name}", moded)))
    for name in ("tile_fft", "tile_ifft"):
        add(Builtin(name, _fft, f"tw::{name}", side_effect=True, emit=_call(f"tw::{name}"),
                    adjoint_emit=(lambda n: lambda a, adj, r, t: f"tw::adj_{n}({a[0]}, {adj[0]})")(name)))
    return E


#: the forms that change their last tile argument in place (no result)
IN_PLACE = {"tile_cholesky_inplace": 0, "tile_cholesky_solve_inplace": 1, "tile_lower_solve_inplace": 1,
            "tile_upper_solve_inplace": 1, "tile_fft": 0, "tile_ifft": 0}
#: every tile operand is read whole by every lane
SHARED = {"tile_cholesky": (0,), "tile_cholesky_solve": (0, 1), "tile_lower_solve": (0, 1),
          "tile_upper_solve": (0, 1), "tile_cholesky_inplace": (0,), "tile_cholesky_solve_inplace": (0, 1),
          "tile_lower_solve_inplace": (0, 1), "tile_upper_solve_inplace": (0, 1), "tile_fft": (0,), "tile_ifft": (0,)}
RESULTS = {"tile_cholesky", "tile_cholesky_solve", "tile_lower_solve", "tile_upper_solve"}
