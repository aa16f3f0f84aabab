"""Keep the package small-grained: no module over 800 lines, no function over 80 (DESIGN, style #11)."""
import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "tilewarp"


def test_module_and_function_sizes():
    too_long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        if text.count("\n") > 800:
            too_long.append(f"{path.name}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > 80:
                    too_long.append(f"{path.name}:{node.lineno} {node.name}() has {length} lines")
    assert not too_long, "split these up:\n" + "\n".join(too_long)
