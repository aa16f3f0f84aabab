"""The user's Python source: text, AST, line offsets, and the names it can see."""
from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass, field

from ..errors import KernelSyntaxError
from ..ir.nodes import Loc
from .captures import _MISSING, lookup



@dataclass
class Source:
    fn: object
    file: str
    first_line: int  # line number of the def in the file
    indent: int  # columns textwrap.dedent removed
    lines: list  # the original source lines of the function
    tree: ast.FunctionDef
    # wp.static values computed when the function was declared, by the call's position in ``tree``
    # (line, col, end line, end col)
    static_values: dict = field(default_factory=dict)

    def loc(self, node) -> Loc:
        line = getattr(node, "lineno", 1)
        text = self.lines[line - 1].rstrip("\n") if 0 < line <= len(self.lines) else ""
        col = getattr(node, "col_offset", 0) + self.indent
        return Loc(self.file, self.first_line + line - 1, col, text.rstrip())

    def lookup(self, name: str):
        """A name not bound locally: closure cell, then module global, then Python builtin."""
        return lookup(self.fn, name)

    def evaluate(self, node: ast.expr, local_constants: dict):
        """Evaluate an expression in Python (``wp.static``) with the function's visible names."""
        code = compile(ast.Expression(body=node), self.file, "eval")
        scope = dict(self.fn.__globals__)
        for name in code.co_names:
            value = self.lookup(name)
            if value is not _MISSING:
                scope[name] = value
        scope.update(local_constants)
        return eval(code, scope)


def get_source(fn) -> Source:
    try:
        lines, first_line = inspect.getsourcelines(fn)
        file = inspect.getsourcefile(fn) or "<unknown>"
    except (OSError, TypeError) as e:
        raise KernelSyntaxError(f"cannot read the source of {fn.__qualname__}: {e}") from None
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    indent = len(text.splitlines()[0]) - len(dedented.splitlines()[0])
    tree = ast.parse(dedented).body[0]
    if not isinstance(tree, ast.FunctionDef):
        raise KernelSyntaxError(f"{fn.__qualname__} is not a plain function definition")
    return Source(fn, file, first_line, indent, lines, tree)


MISSING = _MISSING
