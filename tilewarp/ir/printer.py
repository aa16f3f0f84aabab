"""A readable text dump of the IR (``TILEWARP_DUMP=1`` and golden tests)."""
from __future__ import annotations

from ..language import types as T
from . import nodes as ir


def _op(op) -> str:
    if isinstance(op, ir.Copy):
        return f"copy {op.src!r}"
    args = ", ".join(repr(a) for a in op.args)
    if isinstance(op, ir.FuncCall):
        return f"call {op.func.symbol}({args})"
    tmpl = f"<{', '.join(map(T.type_name, op.template))}>" if op.template else ""
    return f"{op.builtin.name}{tmpl}({args})"


def _lines(stmts, depth):
    pad = "  " * depth
    for s in stmts:
        if isinstance(s, ir.Assign):
            dst = f"{s.dst!r}: {T.type_name(s.dst.type)} = " if s.dst is not None else ""
            yield f"{pad}{dst}{_op(s.op)}"
        elif isinstance(s, ir.If):
            yield f"{pad}if {s.cond!r} merge {list(s.merged)}:"
            yield from _lines(s.body, depth + 1)
            yield f"{pad}else:"
            yield from _lines(s.orelse, depth + 1)
        elif isinstance(s, ir.For):
            yield f"{pad}for {s.var!r} in range({s.start!r}, {s.stop!r}, {s.step!r}) carry {list(s.carried)}:"
            yield from _lines(s.body, depth + 1)
        elif isinstance(s, ir.While):
            yield f"{pad}while carry {list(s.carried)}:"
            yield from _lines(s.test, depth + 1)
            yield f"{pad}  if not {s.cond!r}: break"
            yield from _lines(s.body, depth + 1)
        elif isinstance(s, ir.Return):
            yield f"{pad}return {s.value!r}" if s.value is not None else f"{pad}return"
        else:
            yield f"{pad}{type(s).__name__.lower()}"


def dump(fn: ir.Function) -> str:
    params = ", ".join(f"{p!r} {n}: {T.type_name(p.type)}" for p, n in zip(fn.params, fn.param_names))
    head = f"{'kernel' if fn.is_kernel else 'func'} {fn.symbol}({params}) -> {T.type_name(fn.return_type)}"
    return "\n".join([head, *_lines(fn.body, 1)])
