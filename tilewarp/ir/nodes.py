"""The typed IR: values, operations and structured statements.

A function body is a list of statements; control flow stays structured (``If``, ``For``,
``While``) so the emitter prints it back as C++ blocks and the reverse pass (autodiff) can walk
it backwards. Values are written once (SSA), except *carried* values: those a loop or branch
updates, which are marked ``mutable`` and listed on the statement that carries them, so a later
pass sees every loop-carried dependence without scanning the body.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Loc:
    """Where in the user's source a statement or expression came from."""

    file: str
    line: int
    col: int
    text: str = ""


class Value:
    """One typed value. ``const`` holds a Python literal for compile-time constants."""

    __slots__ = ("id", "type", "hint", "const", "weak", "mutable")

    def __init__(self, id: int, type, hint: str = "", const=None, weak=False, mutable=False):
        self.id, self.type, self.hint = id, type, hint
        self.const, self.weak, self.mutable = const, weak, mutable

    @property
    def is_const(self) -> bool:
        return self.const is not None

    def __repr__(self):
        return f"%{self.id}" if self.const is None else repr(self.const)


# ---- operations (right-hand sides) ----------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """A builtin from the table, e.g. ``tw::add(a, b)``; ``template`` are C++ template args."""

    builtin: object  # builtins.registry.Builtin
    args: tuple
    template: tuple = ()


@dataclass(frozen=True)
class FuncCall:
    """A call of a user ``@func`` specialised for the argument types."""

    func: object  # Function (IR of the callee)
    args: tuple


@dataclass(frozen=True)
class Copy:
    src: Value


# ---- statements -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Assign:
    """``dst = op``; ``dst`` is None for calls kept only for their effect (stores, atomics)."""

    dst: Value | None
    op: object
    loc: Loc | None = None


@dataclass(frozen=True)
class If:
    cond: Value
    body: list
    orelse: list
    merged: tuple = ()  # values both branches write (the phi nodes, as copies)
    loc: Loc | None = None


@dataclass(frozen=True)
class For:
    """``for var in range(start, stop, step)``; ``carried`` values are updated by the body."""

    var: Value
    start: Value
    stop: Value
    step: Value
    body: list
    carried: tuple = ()
    loc: Loc | None = None


@dataclass(frozen=True)
class While:
    """``while cond``: ``test`` recomputes ``cond`` before every iteration."""

    test: list
    cond: Value
    body: list
    carried: tuple = ()
    loc: Loc | None = None


@dataclass(frozen=True)
class Break:
    loc: Loc | None = None


@dataclass(frozen=True)
class Continue:
    loc: Loc | None = None


@dataclass(frozen=True)
class Return:
    value: Value | None = None
    loc: Loc | None = None


@dataclass(eq=False)
class Function:
    """A kernel or a specialised ``@func``: parameters, body and every value it defines."""

    name: str  # the user's name
    symbol: str  # the mangled C++ name (language/names.py)
    params: list
    param_names: list
    body: list
    return_type: object = None
    is_kernel: bool = False
    values: list = field(default_factory=list)
    callees: list = field(default_factory=list)  # Function IRs called, in first-use order
    loc: Loc | None = None
    origin: object = None  # the @wp.func (kernel.Function) this specialises: its func_grad / func_replay
    block_dependent: bool = False  # its IR depends on the block size (wp.tile(x), untile, wp.block_dim())
    captures: list = field(default_factory=list)  # (python fn, name, snapshot) of globals compiled in


def operands(s: Assign) -> tuple:
    """The values an assignment reads: a call's arguments, or a copy's source."""
    return tuple(s.op.args) if isinstance(s.op, (Call, FuncCall)) else (s.op.src,)


def walk(stmts):
    """Yield every statement, depth first, including those nested in control flow."""
    for s in stmts:
        yield s
        if isinstance(s, If):
            yield from walk(s.body)
            yield from walk(s.orelse)
        elif isinstance(s, For):
            yield from walk(s.body)
        elif isinstance(s, While):
            yield from walk(s.test)
            yield from walk(s.body)
