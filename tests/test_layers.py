"""Imports run one way (docs/ARCHITECTURE.md, "Layers"): every module's imports, those inside functions
included, go to its own unit or to one listed before it. A unit is a folder of ``tilewarp/`` or a
module at its root; units are grouped into layers, lowest first, and listed in dependency order
inside each layer. Where a lower layer needs something of a higher one, the higher one registers
it (a table or a hook filled at import): an import upwards is a failure here, not a lazy import.
"""
import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "tilewarp"

#: (layer, its units in dependency order); a unit may import itself and every unit before it
LAYERS = [
    ("foundation", ["config", "errors"]),
    ("language", ["language", "types", "builtins"]),
    ("compiler", ["ir", "frontend", "autodiff", "tiling", "emit", "compile"]),
    ("runtime", ["runtime"]),
    ("api", ["api", "__init__"]),
    ("libraries", ["block_programs", "pallas", "arrange", "autograd", "utils", "optim", "render", "distributed", "geometry", "examples"]),
]
ORDER = {unit: k for k, unit in enumerate(u for _, units in LAYERS for u in units)}
LAYER_OF = {unit: name for name, units in LAYERS for unit in units}

#: (importing module, imported unit): why the import may run upwards
LAZY_LIBRARIES = ("Warp scripts use wp.render, wp.optim, wp.utils, wp.autograd and wp.HashGrid ... without "
                  "importing them: the package's __getattr__ loads each on first use")
ALLOWED = {("tilewarp", unit): LAZY_LIBRARIES for unit in ("render", "optim", "utils", "autograd", "geometry", "examples")}


def _modules() -> dict:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()


def _unit(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__"
    return parts[1]


def _imports(module: str, path: pathlib.Path, modules=None):
    """(imported module, line) for every import of a tilewarp module, at any depth of the file."""
    modules = MODULES if modules is None else modules
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module
            # "from pkg import mod" imports the module; "from mod import name" the module itself
            targets = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in modules else prefix for a in node.names]
        else:
            continue
        for target in targets:
            if target == "tilewarp" or target.startswith("tilewarp."):
                while target not in modules and "." in target:
                    target = target.rpartition(".")[0]
                yield target, node.lineno


def _edges():
    for module, path in MODULES.items():
        for target, line in _imports(module, path):
            yield module, target, f"{path.relative_to(PACKAGE.parent)}:{line}"


def _upward(edges) -> list:
    bad = []
    for module, target, where in edges:
        a, b = _unit(module), _unit(target)
        if ORDER[b] > ORDER[a] and (module, b) not in ALLOWED:
            bad.append(f"{where}: {module} ({LAYER_OF[a]}: {a}) imports {target} ({LAYER_OF[b]}: {b})")
    return bad


def test_every_unit_has_a_layer():
    units = {_unit(m) for m in MODULES}
    missing = sorted(units - set(ORDER))
    assert not missing, f"give these a layer in tests/test_layers.py and docs/ARCHITECTURE.md: {missing}"


def test_imports_run_downwards():
    bad = _upward(_edges())
    assert not bad, "imports from a lower unit to a higher one:\n" + "\n".join(bad)


def test_no_cycle_between_folders():
    graph = {}
    for module, target, _ in _edges():
        a, b = _unit(module), _unit(target)
        if a != b and (module, b) not in ALLOWED:
            graph.setdefault(a, set()).add(b)
    # Tarjan's strongly connected components over the units
    index, low, stack, on, cycles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in list(graph):
        if v not in index:
            visit(v)
    assert not cycles, f"units importing each other: {cycles}"


def test_allow_list_is_short_and_used():
    used = {(m, _unit(t)) for m, t, _ in _edges()}
    assert len(set(ALLOWED.values())) <= 5, "a handful of reasons at most"
    assert set(ALLOWED) <= used, f"stale entries: {sorted(set(ALLOWED) - used)}"


def test_the_checker_sees_imports_inside_functions(tmp_path):
    """A function-level import (the kind that hid the old cycles) is read and, going upwards, reported;
    one going downwards, or within a folder, is not."""
    mod = tmp_path / "m.py"
    mod.write_text("import numpy\nfrom ..language import types\nfrom .nodes import Assign\n\n\n"
                   "def f():\n    from ..api import kernel\n    return kernel\n")
    modules = {**MODULES, "tilewarp.ir.fake": mod}
    found = list(_imports("tilewarp.ir.fake", mod, modules))
    assert found == [("tilewarp.language.types", 2), ("tilewarp.ir.nodes", 3), ("tilewarp.api.kernel", 7)]
    bad = _upward(("tilewarp.ir.fake", target, f"m.py:{line}") for target, line in found)
    assert len(bad) == 1 and bad[0].startswith("m.py:7: tilewarp.ir.fake (compiler: ir) imports tilewarp.api.kernel")
