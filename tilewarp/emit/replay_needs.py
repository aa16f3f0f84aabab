"""Which replayed values the reverse pass needs: the rest of the replay is left out.

A backward kernel replays the forward body to recompute the values adjoints read, but many adjoints
read none of their statement's results: a tile GEMM's ``tile_matmul`` adjoint reads the two operands,
not the sum; a store's adjoint reads the indices, not the stored value. Replaying such a statement
costs the forward's work again (the GEMM's whole product, and a snapshot of its loop-carried sum per
iteration) and the compile time of its code (the CPU backward of a tile GEMM compiled 2.7 s).

The backward is printed twice. The first printing tags each line with what printed it: the replay
of a statement that could be left out, the loop checkpoints of carried values, the declarations, or
anything else (the adjoint calls, conditions, loop bounds). The values named by the untagged lines
are needed; so is every value a needed value's statement names, to a fixed point. The second
printing leaves out the replay of statements whose result is not needed, and checkpoints only the
needed carried values. The printed names are the evidence, so an adjoint that reads a value keeps it
however it was printed (a builtin's ``adjoint_emit``, a user's ``@wp.func_grad``, a combined load).
"""
from __future__ import annotations

from ..autodiff.access import holds_arrays
from ..builtins.tile import MUTATES, VIEWS
from ..ir import nodes as ir
from ..language import names


#: tags of lines that name values without needing them
DECLARATION, CHECKPOINT = "declaration", "checkpoint"


def prunable(s) -> bool:
    """Whether the replay of statement ``s`` may be left out when its result is not needed: a pure
    computation of one value (not an array, whose gradient array is set up beside it; not a view,
    whose adjoint is the same view of the source's; not a call that changes its arguments)."""
    if not isinstance(s, ir.Assign) or s.dst is None:
        return False
    if holds_arrays(s.dst.type):
        return False
    if isinstance(s.op, ir.Call):
        b = s.op.builtin
        return not (b.side_effect or b.in_place or b.storage is not None or b.name in MUTATES or b.name in VIEWS)
    return True


def needed_values(lines, tags: dict, values) -> set:
    """ids of the ``values`` the printed ``lines`` need (``tags``: line number -> tag, as above; a
    statement for its replay's lines; untagged lines need what they name)."""
    by_name = {names.raw(v): v for v in values}

    def named(text):
        return {id(by_name[m]) for m in names.RAW_NAME.findall(text) if m in by_name}

    needed, reads, result = set(), {}, {}
    for k, text in enumerate(lines):
        tag = tags.get(k)
        if tag is None:
            needed |= named(text)
        elif isinstance(tag, ir.Assign):
            reads.setdefault(id(tag), set()).update(named(text))
            result[id(tag)] = id(tag.dst)
    changed = True
    while changed:  # a needed value needs what its statements read
        changed = False
        for sid, r in reads.items():
            if result[sid] in needed and not r <= needed:
                needed |= r
                changed = True
    return needed
