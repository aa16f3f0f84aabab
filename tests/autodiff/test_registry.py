"""Every differentiable builtin has an adjoint and a gradient test (DESIGN: generated from the registry)."""
import pathlib
import re

from tilewarp.builtins.registry import REGISTRY

HERE = pathlib.Path(__file__).parent

#: builtins reached through syntax rather than a call by name, and a pattern showing a test uses it
SYNTAX = {
    "add": r"\+", "sub": r" - ", "mul": r"\*", "div": r" / ", "matmul": r" @ ", "mod": r" % ", "neg": r"= -\w",
    "pos": r"= \+\w", "load": r"\w\[i\]", "store": r"\w\[i\] = ", "view": r"\w\[i\]\[", "extract": r"\w\[\d\]",
    "with_component": r"\w\[\d\] = ", "extract_row": r"\w\[\d\]", "with_row": r"\w\[\d\] = ",
    "construct": r"wp\.vec3d\(", "cast": r"wp\.float64\(", "struct_new": r"@wp\.struct", "struct_get": r"\w\.\w+ \*",
    "struct_set": r"\w\.\w+ = ", "make_tuple": r"return \w+, \w+", "tuple_get": r"\w+, \w+ = ",
    "store_component": r"\w\[i, j\]\[\d\] = ",
}
#: tile builtins reached through syntax in tests/tiles/test_tile_grads.py
TILE_SYNTAX = {"tile_map": r"wp\.tile_map\(|x \* y", "tile_extract": r"x\[2, 3\]"}
#: builtins whose gradient tests live next to their other tests
ELSEWHERE = {"slice_view": "frontend/test_slicing.py"}
#: the geometry family's tests (each file with its own finite-difference checks)
GEOMETRY_TESTS = "".join(p.read_text() for p in (HERE.parent / "geometry").glob("test_*.py"))


def test_every_differentiable_builtin_has_an_adjoint():
    for name, b in REGISTRY.items():
        if b.differentiable:
            assert b.adjoint or b.adjoint_emit, f"{name} is differentiable but names no adjoint"
        else:
            assert b.adjoint_emit is None, f"{name} is not differentiable but has an adjoint_emit"


def test_every_differentiable_builtin_is_gradient_tested():
    text = "".join(p.read_text() for p in HERE.glob("*.py") if p.name != pathlib.Path(__file__).name)
    untested = []
    for name, b in REGISTRY.items():
        if not b.differentiable or name.startswith("_"):
            continue
        if name in ELSEWHERE:
            assert "grad" in (HERE.parent / ELSEWHERE[name]).read_text(), name
            continue
        if name.startswith("tile") or name == "untile":  # tile ops: tests/tiles/test_tile_grads.py, and the
            # linear algebra and FFT files (their gradcheck kernels)
            tiles = "".join((HERE.parent / "tiles" / f).read_text()
                            for f in ("test_tile_grads.py", "test_tile_linalg.py", "test_tile_fft.py"))
            if not re.search(TILE_SYNTAX.get(name, rf"\b(wp\.)?{name}\("), tiles):
                untested.append(name)
            continue
        pattern = SYNTAX.get(name, rf"\b(wp\.)?{name}\(")
        if (b.header or "").startswith("geometry/"):  # geometry builtins: finite differences in tests/geometry
            if not re.search(pattern, GEOMETRY_TESTS) or "finite diff" not in GEOMETRY_TESTS:
                untested.append(name)
            continue
        if not re.search(pattern, text):
            untested.append(name)
    assert not untested, f"differentiable builtins without a gradient test in tests/autodiff: {untested}"
