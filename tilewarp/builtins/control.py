"""Output and selection builtins (print, printf, where, select) and the tuple plumbing behind
multiple return values (``make_tuple``/``tuple_get``; any builtin whose type rule returns a
``T.TupleType`` returns a ``tw::tuple_t`` the frontend unpacks with ``tuple_get``)."""
from __future__ import annotations

import builtins as py

from ..language import types as T
from .registry import Builtin, fail, names, register

#: Warp caps printf's variadic arguments at 32
MAX_PRINTF_ARGS = 32


def c_string(text: str) -> str:
    """A C string literal for ``text`` (UTF-8; every byte outside printable ASCII as an octal escape)."""
    out = []
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch in '"\\?':  # '?' too: no trigraphs
            out.append("\\" + ch)
        elif ch in "\n\t":
            out.append("\\n" if ch == "\n" else "\\t")
        elif 32 <= byte < 127:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _printable(t) -> bool:
    return T.is_scalar(t) or T.is_composite(t)


def _print(args, template):
    if template:  # print("text"): the string is in the template
        return None
    if len(args) != 1:
        fail(f"takes one value, got {len(args)}")
    if not _printable(args[0]):
        fail(f"cannot print a {T.type_name(args[0])} value")
    return None


def _print_cpp(a, template):
    return f"tw::print({c_string(template[0])})" if template else f"tw::print({a[0]})"


def _printf(args, template):
    if len(args) + len(template[1]) > MAX_PRINTF_ARGS:
        fail(f"takes at most {MAX_PRINTF_ARGS} values after the format")
    for t in args:
        if not T.is_scalar(t):
            fail(f"printf() prints scalars and strings, got a {T.type_name(t)} value "
                 "(print its components, or use print())")
    return None


def _printf_cpp(a, template):
    """``template == (fmt, ((position, text), ...))``: string arguments go back to their places."""
    fmt, strings = template
    values = iter(a)
    by_position = dict(strings)
    n = len(a) + len(strings)
    args = [c_string(by_position[k]) if k in by_position else next(values) for k in range(n)]
    return f"tw::printf({', '.join([c_string(fmt), *args])})"


def _chooser(order):
    def rule(args, template):
        if len(args) != 3:
            fail(f"takes 3 arguments (cond, {order}), got {len(args)}")
        cond, a, b = args
        if not (cond is T.bool_ or T.is_int(cond) or T.is_array(cond)):
            fail(f"condition must be a bool, an integer or an array, got {T.type_name(cond)}")
        if a != b:
            fail(f"both values must have one type, got ({names((a, b))})")
        if isinstance(a, T.TupleType):
            fail("cannot choose between tuples")
        return a

    return rule


def _adj_choose(first_if_true):
    """where/select: accumulate into the chosen value's adjoint (args: cond, first, second)."""

    def emit(a, adj, adj_ret, template):
        taken, other = (adj[1], adj[2]) if first_if_true else (adj[2], adj[1])
        return (f"(tw::detail::truthy({a[0]}) ? tw::adj_accum({taken}, {adj_ret}) "
                f": tw::adj_accum({other}, {adj_ret}))")

    return emit


def _make_tuple(args, template):
    (t,) = template
    if tuple(args) != t.types:
        fail(f"tuple of ({names(t.types)}) built from ({names(args)})")
    return t


def _make_tuple_cpp(a, template):
    return f"tw::make_tuple<{', '.join(t._cpp_ for t in template[0].types)}>({', '.join(a)})"


def _tuple_get(args, template):
    (t,), (i,) = args, template
    if not isinstance(t, T.TupleType) or not 0 <= i < len(t.types):
        fail(f"no element {i} in {T.type_name(t)}")
    return t.types[i]


# Tuple adjoints are tuples of the element adjoints; array elements have none to accumulate.
def _adj_make_tuple(a, adj, adj_ret, template):
    elements = enumerate(zip(adj, template[0].types))
    parts = [f"tw::adj_accum({g}, tw::get<{i}>({adj_ret}))" for i, (g, t) in elements if not T.is_array(t)]
    return "; ".join(parts) or "(void)0"


def _adj_tuple_get(a, adj, adj_ret, template):
    # never called for an array element: the reverse pass computes that adjoint forward
    return f"tw::adj_accum(tw::get<{template[0]}>({adj[0]}), {adj_ret})"


def _reverse_range(args, template):
    if len(args) != 3 or len(set(args)) != 1 or not T.is_int(args[0]):
        fail(f"takes (start, stop, step) of one integer type, got ({names(args)})")
    return T.TupleType((args[0], args[0]))


def _ints(args, what):
    if len(args) != len(what) or any(a is not T.int32 for a in args):
        fail(f"expects ({', '.join(what)}: int32), got ({names(args)})")


def _lane_element(args, template):
    _ints(args, ["round"])
    return T.int32


def _lane_rank(args, template):
    _ints(args, ["digit", "round", "bits"])
    return None


def _lane_tally(args, template):
    _ints(args, ["digit", "table", "round"])
    return None


def _lane_tally_total(args, template):
    _ints(args, ["digit", "table"])
    return T.int32


def _lane_prefetch(args, template):
    if len(args) != 3 or not isinstance(args[0], T.ArrayType) or args[0].ndim != 1 or args[1] is not T.int32 or \
            args[2] is not T.int32:
        fail(f"expects (array: 1-d array, base: int32, n: int32), got ({names(args)})")
    return None


def _counters(args, arrays, what):
    if len(args) != arrays + len(what) or any(a is not T.int32 for a in args[arrays:]) or \
            any(not isinstance(a, T.ArrayType) or a.dtype is not T.int64 or a.ndim != 1 for a in args[:arrays]):
        fail(f"expects ({arrays} array(int64), then {', '.join(what)}: int32), got ({names(args)})")


def _lane_ticket(args, template):
    _counters(args, 1, ["slot"])
    return T.int32


def _lane_bases(args, template):
    _counters(args, 2, ["chunk", "digits"])
    return None


def _lane_stage(args, template):
    if len(args) != 4 or args[0] is not T.int32 or args[1] is not T.int32 or args[2] not in (T.uint32, T.uint64) \
            or args[3] is not T.int32:
        fail(f"expects (digit: int32, round: int32, key: uint32/uint64, value: int32), got ({names(args)})")
    return None


def _lane_flush(args, template):
    if len(args) != 2 or args[0] is not T.int32 or args[1] not in (T.uint32, T.uint64):
        fail(f"expects (round: int32, key: uint32/uint64), got ({names(args)})")
    return T.TupleType((args[1], T.int32, T.int32))


def _lane_fold(args, template):
    if len(args) != 1 or not (T.is_scalar(args[0]) or T.is_vector(args[0])) or T.scalar_of(args[0]) not in _FOLDED:
        fail(f"expects one int32/int64/float32/float64 scalar or vector, got ({names(args)})")
    return args[0]


def _lane_leader(args, template):
    if args:
        fail(f"takes no arguments, got ({names(args)})")
    return T.bool_


_FOLDED = (T.int32, T.int64, T.float32, T.float64)


def _host_printf(fmt, *args):
    py.print(fmt % tuple(a.value if isinstance(a, T.Scalar) else a for a in args), end="")


register(
    Builtin("print", _print, "tw::print", differentiable=False, side_effect=True, emit=_print_cpp,
            host=py.print),
    Builtin("printf", _printf, "tw::printf", differentiable=False, side_effect=True, unify_literals=False,
            emit=_printf_cpp, host=_host_printf),
    Builtin("where", _chooser("value_if_true, value_if_false"), "tw::where",
            unify_literals=False, host=lambda c, a, b: a if c else b, adjoint_emit=_adj_choose(True)),
    Builtin("select", _chooser("value_if_false, value_if_true"), "tw::select",
            unify_literals=False, host=lambda c, f, t: t if c else f, adjoint_emit=_adj_choose(False)),
    Builtin("make_tuple", _make_tuple, "tw::make_tuple", adjoint="tw::adj_make_tuple", unify_literals=False,
            emit=_make_tuple_cpp, adjoint_emit=_adj_make_tuple),
    Builtin("tuple_get", _tuple_get, "tw::get", adjoint="tw::adj_tuple_get", unify_literals=False,
            emit=lambda a, t: f"tw::get<{t[0]}>({a[0]})", adjoint_emit=_adj_tuple_get),
    # reversed(range(start, stop, step)) -> (first, stop) of the range with step -step
    Builtin("reverse_range", _reverse_range, "tw::reverse_range", differentiable=False),
    # the radix sort's stable rank within a block's chunk, and the chunk's digit counts
    # (tilewarp/utils/radix_lanes.py; native/runtime/lanes.h)
    Builtin("_lane_element", _lane_element, "tw::lane_element", differentiable=False, header="runtime/lanes.h"),
    Builtin("_lane_prefetch", _lane_prefetch, "tw::lane_prefetch", differentiable=False, unify_literals=False,
            side_effect=True, header="runtime/lanes.h"),
    Builtin("_lane_digit_rank", _lane_rank, "tw::lane_digit_rank", differentiable=False, unify_literals=False,
            side_effect=True, header="runtime/lanes.h"),
    Builtin("_lane_digit_tally", _lane_tally, "tw::lane_digit_tally", differentiable=False, unify_literals=False,
            side_effect=True, header="runtime/lanes.h"),
    Builtin("_lane_tally_total", _lane_tally_total, "tw::lane_tally_total", differentiable=False,
            unify_literals=False, header="runtime/lanes.h"),
    Builtin("_lane_ticket", _lane_ticket, "tw::lane_ticket", differentiable=False, unify_literals=False,
            side_effect=True, header="runtime/lanes.h"),
    Builtin("_lane_digit_bases", _lane_bases, "tw::lane_digit_bases", differentiable=False, unify_literals=False,
            side_effect=True, header="runtime/lanes.h"),
    Builtin("_lane_stage", _lane_stage, "tw::lane_stage", differentiable=False, unify_literals=False,
            side_effect=True, header="runtime/lanes.h"),
    Builtin("_lane_flush", _lane_flush, "tw::lane_flush", differentiable=False, unify_literals=False,
            side_effect=True, header="runtime/lanes.h"),
    # a warp's fold of one value per lane, and the lane that writes it: the library's reductions
    # (geometry builds) send one atomic per warp instead of one per thread
    *(Builtin(f"_lane_{op}", _lane_fold, f"tw::lane_{op}", differentiable=False, header="runtime/lanes.h")
      for op in ("min", "max", "sum")),
    Builtin("_lane_leader", _lane_leader, "tw::lane_leader", differentiable=False, header="runtime/lanes.h"),
)
