"""Which of Warp 1.19's kernel-side builtins tilewarp implements: writes docs/BUILTINS.md.

The list comes from the installed warp-lang's builtin registry (``warp._src.context.builtin_functions``),
without geometry (mesh, BVH, hash grid), volumes, textures, noise and tile primitives. A builtin is
*implemented* when tilewarp's table (``tilewarp.builtins.REGISTRY``) has an entry of that name, or,
for what users reach through Python syntax or a type (``a[i] += x``, ``for``, ``wp.vec3(...)``,
``len``, ``wp.static``), when a probe kernel using that syntax goes through tilewarp's frontend and
C++ emitter. Everything else is listed as *not yet*, with the reason.

    python tools/builtin_coverage.py          # rewrite docs/BUILTINS.md
    python tools/builtin_coverage.py --check  # exit 1 if docs/BUILTINS.md is out of date
"""
from __future__ import annotations

import importlib.util
import sys
import tempfile
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "BUILTINS.md"

EXCLUDED_GROUPS = {"Geometry", "Volumes", "Textures", "Tile Primitives"}
EXCLUDED_NAMES = {"noise", "pnoise", "curlnoise"}

#: Builtins users reach through syntax or a type rather than by name: (how it is written, probe body).
#: The probe kernel has parameters a: array(float), ai: array(int), a2: array2d(float).
SYNTAX = {
    "add": ("`x + y`", "x = a[0] + a[1]"),
    "sub": ("`x - y`", "x = a[0] - a[1]"),
    "mul": ("`x * y`", "x = a[0] * a[1]"),
    "div": ("`x / y`", "x = a[0] / a[1]"),
    "mod": ("`x % y`", "x = a[0] % a[1]"),
    "floordiv": ("`x // y`", "x = a[0] // a[1]"),
    "neg": ("`-x`", "x = -a[0]"),
    "pos": ("`+x`", "x = +a[0]"),
    "bit_and": ("`i & j`", "k = ai[0] & ai[1]"),
    "bit_or": ("`i | j`", "k = ai[0] | ai[1]"),
    "bit_xor": ("`i ^ j`", "k = ai[0] ^ ai[1]"),
    "lshift": ("`i << j`", "k = ai[0] << ai[1]"),
    "rshift": ("`i >> j`", "k = ai[0] >> ai[1]"),
    "invert": ("`~i`", "k = ~ai[0]"),
    "unot": ("`not x`", "b = not (a[0] > 0.0)"),
    "index": ("`a[i]`, `v[i]` (read)", "x = a2[0, 1]\n    v = wp.vec3(1.0, 2.0, 3.0)\n    y = v[1]"),
    "indexref": ("`a[i]` (element used in place)", "x = a[0]"),
    "extract": ("`v[i]`, `m[i, j]`, `v.x`", "v = wp.vec3(1.0, 2.0, 3.0)\n    x = v[1] + v.x"),
    "address": ("`a[i] += x` (atomic address)", "a[0] += 1.0"),
    "array_store": ("`a[i] = x`", "a[0] = 1.0"),
    "load": ("`a[i]` (read through an address)", "x = a[0]"),
    "store": ("`a[i] = x` (write through an address)", "a[0] = 1.0"),
    "view": ("`a[i]` on a multi-dimensional array (a view)", "row = a2[0]\n    x = row[1]"),
    "add_inplace": ("`v[i] += x`", "v = wp.vec3()\n    v[0] += 1.0"),
    "sub_inplace": ("`v[i] -= x`", "v = wp.vec3()\n    v[0] -= 1.0"),
    "bit_and_inplace": ("`ai[i] &= j`", "ai[0] &= 3"),
    "bit_or_inplace": ("`ai[i] |= j`", "ai[0] |= 3"),
    "bit_xor_inplace": ("`ai[i] ^= j`", "ai[0] ^= 3"),
    "assign_inplace": ("`v[i] = x`", "v = wp.vec3()\n    v[1] = 2.0"),
    "assign_copy": ("`m[i] = row`, `v.x = x`", "m = wp.mat22()\n    m[0] = wp.vec2(1.0, 2.0)"),
    "transform_add_inplace": ("`t.p += v`", "t = wp.transform_identity()\n    t.p += wp.vec3(1.0, 2.0, 3.0)"),
    "transform_sub_inplace": ("`t.p -= v`", "t = wp.transform_identity()\n    t.p -= wp.vec3(1.0, 2.0, 3.0)"),
    "transform_set_rotation_copy": ("`t.q = q`", "t = wp.transform_identity()\n    t.q = wp.quat_identity()"),
    "transform_set_translation_copy": ("`t.p = p`", "t = wp.transform_identity()\n    t.p = wp.vec3(1.0, 2.0, 3.0)"),
    "range": ("`for i in range(...)`", "for i in range(3):\n        a[i] = 0.0"),
    "iter_next": ("`for` loops", "for i in range(0, 8, 2):\n        a[i] = 0.0"),
    "reversed": ("`for i in reversed(range(...))`", "for i in reversed(range(3)):\n        a[i] = 0.0"),
    "len": ("`len(a)`, `len(v)`", "n = len(a) + len(wp.vec3())"),
    "static": ("`wp.static(expr)`", "n = wp.static(1 + 2)\n    a[0] = float(n)"),
    "tuple": ("tuple values `t = (x, i)`, `t[0]`", "t = (a[0], ai[0])\n    x = t[0]"),
    "slice": ("`a[i:j]` in kernels", "b = a[1:3]"),
    "float": ("`float(x)`", "x = float(ai[0])"),
    "int": ("`int(x)`", "k = int(a[0])"),
    "bool": ("`wp.bool(x)`", "b = wp.bool(ai[0])"),
    "vector": ("`wp.vector(..., length=, dtype=)`, `wp.vec3(...)`", "v = wp.vector(1.0, 2.0, 3.0)"),
    "matrix": ("`wp.matrix(..., shape=)`, `wp.mat33(...)`", "m = wp.matrix(1.0, 2.0, 3.0, 4.0, shape=(2, 2))"),
    "quaternion": ("`wp.quaternion(...)`, `wp.quat(...)`", "q = wp.quaternion(0.0, 0.0, 0.0, 1.0)"),
    "transformation": ("`wp.transformation(p, q)`, `wp.transform(...)`",
                       "t = wp.transformation(wp.vec3(1.0, 2.0, 3.0), wp.quat_identity())"),
    "spatial_vector": ("`wp.spatial_vector(...)`", "s = wp.spatial_vector(1.0, 2.0, 3.0, 4.0, 5.0, 6.0)"),
    "array": ("`wp.array(ptr=, shape=, dtype=)` in kernels", "b = wp.array(ptr=0, shape=(4,), dtype=float)"),
    "zeros": ("`wp.zeros(shape, dtype)` (fixed-size local array)", "b = wp.zeros(4, dtype=float)"),
}
for _t in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
           "float64", "bfloat16"):
    SYNTAX[_t] = (f"`wp.{_t}(x)`", f"x = wp.{_t}(a[0])")

#: tilewarp table entries that share a Warp name but mean something else: never counted as that builtin.
CLASHES = {"cast", "load", "store", "view", "extract"}

#: Why a builtin is missing, where there is more to say than "not yet".
REASONS = {
    "cast": "Warp's `wp.cast(x, dtype)` reinterprets bits; tilewarp's internal `cast` converts values",
    "bfloat16": "no bfloat16 scalar type yet",
    "breakpoint": "a debugger trap; tilewarp's debug builds report failures after the launch instead",
    "block_dim": "needs the block size passed into kernels",
    "copy": "Warp's code generator inserts it for assignments; tilewarp assigns directly (nothing to expose)",
    "iter_next": "Warp's code generator inserts it for `for` loops",
    "dense_chol": "deprecated dense linear algebra (superseded by Warp's tile primitives)",
    "slice": "array slicing inside kernels (slice on the host instead)",
    "array": "arrays built from pointers inside kernels",
    "zeros": "fixed-size local arrays inside kernels",
}


def reason(name: str) -> str:
    if name in REASONS:
        return REASONS[name]
    if name.startswith("dense_"):
        return REASONS["dense_chol"]
    return ""


def warp_builtins() -> list[tuple[str, str, str]]:
    """``(group, name, one-line description)`` of each kernel-side Warp builtin in scope, sorted."""
    from warp._src import context

    out = []
    for name, f in context.builtin_functions.items():
        if f.group in EXCLUDED_GROUPS or name in EXCLUDED_NAMES or name.startswith("tile"):
            continue
        doc = (f.doc or "").strip().split("\n")[0].strip()
        out.append((f.group, name, doc))
    return sorted(out)


def _probe_source(names: list[str]) -> str:
    lines = ["import tilewarp as wp", ""]
    for name in names:
        body = SYNTAX[name][1]
        lines += ["", "@wp.kernel",
                  f"def probe_{name}(a: wp.array(dtype=float), ai: wp.array(dtype=int), "
                  "a2: wp.array2d(dtype=float)):",
                  "    " + body, ""]
    return "\n".join(lines)


def probe(names: list[str]) -> dict[str, bool]:
    """For each syntax-level builtin: does its probe kernel lower and emit in tilewarp?"""
    from tilewarp.emit import emit_module

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tilewarp_builtin_probes.py"
        path.write_text(_probe_source(names))
        spec = importlib.util.spec_from_file_location("tilewarp_builtin_probes", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        result = {}
        for name in names:
            try:
                emit_module(getattr(module, f"probe_{name}").ir)
                result[name] = True
            except Exception:  # noqa: BLE001 - any failure means "not supported"
                result[name] = False
        return result


def statuses(builtins) -> dict[str, tuple[bool, str]]:
    """name -> (implemented, how it is written / why not)."""
    from tilewarp.builtins import REGISTRY

    names = [n for _, n, _ in builtins]
    probed = probe([n for n in names if n in SYNTAX])
    out = {}
    for name in names:
        if name in SYNTAX:
            out[name] = (True, SYNTAX[name][0]) if probed[name] else (False, reason(name))
        elif name in REGISTRY and name not in CLASHES:
            out[name] = (True, f"`wp.{name}`")
        else:
            out[name] = (False, reason(name))
    return out


def render() -> str:
    import warp

    builtins = warp_builtins()
    status = statuses(builtins)
    done = sum(1 for ok, _ in status.values() if ok)
    head = f"""\
    # Kernel-side builtins: tilewarp vs Warp {warp.config.version}

    Generated by `python tools/builtin_coverage.py` (do not edit; `tests/test_coverage_doc.py` fails
    when this file is out of date). Scope: every builtin in Warp's registry except geometry (mesh,
    BVH, hash grid), volumes, textures, noise and tile primitives. *Implemented* means tilewarp's
    builtin table has the name, or, for syntax-level builtins, that a probe kernel written that way
    goes through tilewarp's frontend and emitter.

    **{done} of {len(status)} implemented.**
    """
    lines = [textwrap.dedent(head)]
    group = None
    for g, name, doc in builtins:
        if g != group:
            group = g
            n_ok = sum(1 for gg, nn, _ in builtins if gg == g and status[nn][0])
            n_all = sum(1 for gg, _, _ in builtins if gg == g)
            lines += ["", f"## {g} ({n_ok}/{n_all})", "", "| builtin | status | notes |", "|---|---|---|"]
        ok, note = status[name]
        if not ok and doc and doc != "WIP":  # say what the missing builtin does
            note = f"{note + '. ' if note else ''}Warp: {doc}"
        note = note.replace("|", "\\|")  # a bare | would end the table cell
        lines.append(f"| `{name}` | {'implemented' if ok else 'not yet'} | {note} |")
    return "\n".join(lines) + "\n"


def main(argv) -> int:
    text = render()
    if "--check" in argv:
        if not DOC.exists() or DOC.read_text() != text:
            print(f"{DOC.relative_to(REPO)} is out of date: run python tools/builtin_coverage.py")
            return 1
        return 0
    DOC.write_text(text)
    print(f"wrote {DOC.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
