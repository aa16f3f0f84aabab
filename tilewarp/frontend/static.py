"""``wp.static(expr)``: Python evaluated while the kernel compiles, and its value turned into IR.

The expression sees the function's globals and closure, and its local variables as far as they
are known at compile time: a constant (``n = 3``, an unrolled loop's counter) as its value; a
vector, matrix, quaternion, transform or tile as a stand-in with ``len()``, ``.shape`` and
``.dtype``; ``type(x)`` of any local is its kernel type. Any other use of a local variable (its
value is only known when the kernel runs) is an error naming it, never a global of the same name.
"""
from __future__ import annotations

import ast
import builtins as py

from ..language import types as T
from ..errors import KernelTypeError
from ..ir import nodes as ir


class StaticLocal:
    """A local variable as a static expression sees it: its type, and its shape where it has one."""

    def __init__(self, name: str, t):
        self._name, self.type = name, t

    @property
    def shape(self):
        if T.is_tile(self.type):
            return self.type.shape
        if T.is_composite(self.type):
            return tuple(self.type._wp_shape_)
        raise self._runtime("shape")

    @property
    def dtype(self):
        if T.is_tile(self.type):
            return self.type.dtype
        if T.is_composite(self.type):
            return T.scalar_of(self.type)
        raise self._runtime("dtype")

    @property
    def length(self):
        if T.is_composite(self.type) and not T.is_matrix(self.type):
            return self.type._length_
        raise self._runtime("length")

    def __len__(self):
        return self.shape[0]

    def _runtime(self, what):
        return NameError(f"name '{self._name}' is not defined (it is a kernel variable whose {what} is only "
                         "known when the kernel runs)")

    def __getattr__(self, attr):
        raise NameError(f"name '{self._name}' is not defined (a kernel variable, known only when the kernel runs)")

    def __repr__(self):
        return f"<kernel variable {self._name}: {T.type_name(self.type)}>"

    def _unknown(self, *args):
        raise NameError(f"name '{self._name}' is not defined")


# arithmetic, comparison and conversion of a kernel variable: its value is not known yet
for _op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor", "lshift", "rshift",
            "matmul"):
    setattr(StaticLocal, f"__{_op}__", StaticLocal._unknown)
    setattr(StaticLocal, f"__r{_op}__", StaticLocal._unknown)
for _op in ("neg", "pos", "abs", "invert", "bool", "int", "float", "index", "lt", "le", "gt", "ge", "getitem",
            "iter"):
    setattr(StaticLocal, f"__{_op}__", StaticLocal._unknown)


def _static_type(*args):
    """``type(x)`` in a static expression: a kernel variable's kernel type, else Python's ``type``."""
    if len(args) == 1 and isinstance(args[0], StaticLocal):
        return args[0].type
    return py.type(*args)


def static_locals(lw) -> dict:
    """The kernel's local names as a static expression sees them (module docstring)."""
    out = {}
    for name, v in lw.symbols.items():
        if not isinstance(v, ir.Value):
            continue
        if v.is_const and not v.mutable and T.is_scalar(v.type):
            out[name] = v.const
        else:
            out[name] = StaticLocal(name, v.type)
    out["type"] = _static_type
    return out


def evaluate(lw, expr: ast.expr, node):
    """The value of ``wp.static(expr)`` (``node`` is the call, for the error location)."""
    loc = lw.src.loc(node)
    try:
        value = lw.src.evaluate(expr, static_locals(lw))
    except NameError as e:
        raise KernelTypeError(f"Error evaluating static expression: {e}. Make sure all variables used in the "
                              "static expression are constant.", loc) from e
    except Exception as e:
        raise KernelTypeError(f"Error evaluating static expression: {e}", loc) from e
    return checked(lw, value, node)


def checked(lw, value, node):
    """A static expression's value as kernel code uses it, or a located error for one it cannot."""
    loc = lw.src.loc(node)
    problem = _unsupported(value)
    if problem:
        raise KernelTypeError(f"Static expression returns an unsupported value: {problem}", loc)
    if T.is_struct(py.type(value)):
        return struct_value(lw, value, node)
    return value


def struct_value(lw, value, node) -> ir.Value:
    """A ``@wp.struct`` instance computed by a static expression, as a constant struct value."""
    t = py.type(value)
    values = []
    for name, ft in t._tw_fields_.items():
        field = getattr(value, name)
        v = struct_value(lw, field, node) if T.is_struct(py.type(field)) else lw.materialize(field, node)
        values.append(lw.coerce(v, ft, node, f"field '{name}' of {t.__name__}"))
    return lw.call("struct_new", values, node, (t, tuple(t._tw_fields_)))


def _unsupported(value, where="") -> str | None:
    """Why ``value`` cannot stand in kernel code (None when it can, or when later lowering decides)."""
    if value is None:
        return "None is returned"
    if isinstance(value, StaticLocal):
        return f"the kernel variable '{value._name}' itself (use it without wp.static)"
    if T.is_array(py.type(value)) or isinstance(value, T.host_array):
        return "a Warp array cannot be created inside Warp kernels" + (f" at {where}" if where else "")
    if T.is_struct(py.type(value)):
        inner = _struct_problem(value, py.type(value).__name__)
        if inner:
            return ("the returned Warp struct contains a data type that cannot be constructed inside Warp "
                    f"kernels: {inner}")
        return None
    if not _kernel_usable(value):
        return f"value of type {py.type(value)}"
    return None


def _struct_problem(value, where: str) -> str | None:
    for name in py.type(value)._tw_fields_:
        field = getattr(value, name)
        if T.is_struct(py.type(field)):
            inner = _struct_problem(field, f"{where}.{name}")
        else:
            inner = _unsupported(field, f"{where}.{name}")
        if inner:
            return inner
    return None


def _kernel_usable(value) -> bool:
    """Values a kernel can use: Python and numpy numbers and containers, kernel scalars, vectors and
    matrices, and anything callable or a type or module (functions, builtins, ``wp``, ``wp.vec3``)."""
    import types as pytypes

    import numpy as np

    if isinstance(value, (py.bool, py.int, py.float, py.complex, py.str, py.bytes, py.tuple, py.list, py.dict,
                          py.set, py.frozenset, py.range, py.slice, np.generic, np.ndarray)):
        return True
    if isinstance(value, (T.Scalar, T.VectorBase, T.MatrixBase, py.type, pytypes.ModuleType)):
        return True
    return callable(value)


def static(expr):
    """Inside kernels: evaluate ``expr`` in Python when the kernel is compiled (Warp's ``wp.static``)."""
    return expr


static.__tw_static__ = True


def resolve_at_declaration(fn):
    """Warp evaluates each ``wp.static(...)`` when the kernel or function is declared, where it reads
    only module-level and closure names: so a side-effecting expression runs once, and the value is
    the one at declaration even if a name is rebound before the first launch. Returns the function's
    ``Source`` with those values (by call position) in ``static_values``, or None when it has none.
    Expressions reading a local variable, or that fail now (a name defined later), are left to the
    compile, which evaluates them then and reports their errors at the user's line."""
    from .captures import _MISSING, lookup
    from .source import get_source

    code = fn.__code__
    names = set(code.co_names) | set(code.co_freevars)
    if "static" not in names and not any(lookup(fn, n) is static for n in names):
        return None  # cheap test first: most kernels have no static expression
    try:
        src = get_source(fn)
    except Exception:  # no source to read (exec'd text): everything waits for the compile
        return None
    local_names = {a.arg for a in ast.walk(src.tree.args) if isinstance(a, ast.arg)}
    local_names |= {n.id for n in ast.walk(src.tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}

    def resolve(expr):
        if isinstance(expr, ast.Attribute):
            base = resolve(expr.value)
            return _MISSING if base is _MISSING else getattr(base, expr.attr, _MISSING)
        if isinstance(expr, ast.Name) and expr.id not in local_names:
            return lookup(fn, expr.id)
        return _MISSING

    def visit(node):
        is_static = isinstance(node, ast.Call) and resolve(node.func) is static
        if is_static and len(node.args) == 1 and not node.keywords:
            arg = node.args[0]
            if not any(isinstance(n, ast.Name) and n.id in local_names for n in ast.walk(arg)):
                try:
                    key = (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)
                    src.static_values[key] = src.evaluate(arg, {})
                    return  # nested statics were evaluated with it (wp.static is the identity in Python)
                except Exception:
                    pass
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(src.tree)
    return src if src.static_values else None
