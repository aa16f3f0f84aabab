"""Python AST -> typed IR. One ``visit_X`` per supported node; anything else is a located error.

Names bound once stay SSA values. A name a loop body rebinds becomes a *carried* (mutable) value
written in place, and a name both branches of an ``if`` rebind gets a merged value written at the
end of each branch; both are listed on the IR statement so later passes see them.
"""
from __future__ import annotations

import ast
import builtins as py

from ..language import types as T
from ..builtins import REGISTRY, Builtin, BuiltinTypeError
from ..builtins.registry import public
from ..builtins.operators import BINARY, COMPARE, UNARY
from ..builtins.vector import component_builtin
from .tiles import ELEMENTWISE as TILE_ELEMENTWISE
from ..errors import KernelError, KernelNameError, KernelSyntaxError, KernelTypeError
from ..ir import nodes as ir
from .captures import capture_key
from .source import MISSING, Source

_OPERATORS = frozenset(BINARY.values()) | frozenset(UNARY.values()) | frozenset(COMPARE.values())
#: Python builtins usable in kernels, by the registry entry they mean.
PY_BUILTINS = {py.min: "min", py.max: "max", py.abs: "abs", py.pow: "pow", py.round: "round", py.print: "print"}
_STATIC_MARK = "__tw_static__"


class Lowerer:
    def __init__(self, source: Source, param_types: dict, *, is_kernel: bool, symbol: str, block_dim: int = 256):
        self.src = source
        self.block_dim = block_dim  # lanes per block: the shape of wp.tile(x), wp.block_dim()
        self.param_types = param_types
        self.is_kernel = is_kernel
        self.fn = ir.Function(name=source.tree.name, symbol=symbol, params=[], param_names=[], body=[],
                              is_kernel=is_kernel, loc=source.loc(source.tree))
        self.symbols: dict = {}
        self.stmts: list = self.fn.body
        self.return_types: list = []
        self.loop_depth = 0
        self._next_id = 0

    # ---- entry --------------------------------------------------------------------------------

    def run(self) -> ir.Function:
        for name, t in self.param_types.items():
            v = self.new_value(t, name)
            self.fn.params.append(v)
            self.fn.param_names.append(name)
            self.symbols[name] = v
        self.fn.values = [v for v in self.fn.values if v not in self.fn.params]
        self.symbols.update(getattr(self.src, "prebound", {}))  # block programs: refs, bound keywords
        self.block(self.src.tree.body)
        check_literal_ranges(self.fn.body)
        if not self.is_kernel:
            types = {t for t in self.return_types if t is not None}
            if len(types) > 1:
                raise KernelTypeError(f"function returns different types: {sorted(map(T.type_name, types))}",
                                      self.fn.loc)
            self.fn.return_type = types.pop() if types else None
        return self.fn

    # ---- values and statements ----------------------------------------------------------------

    def new_value(self, t, hint="", mutable=False) -> ir.Value:
        self._next_id += 1
        v = ir.Value(self._next_id, t, hint, mutable=mutable)
        self.fn.values.append(v)
        return v

    def const(self, value, t=None) -> ir.Value:
        self._next_id += 1
        weak = t is None
        if t is None:
            t = T.bool_ if isinstance(value, py.bool) else T.int32 if isinstance(value, py.int) else T.float32
        value = py.bool(value) if t is T.bool_ else py.float(value) if T.is_float(t) else py.int(value)
        return ir.Value(self._next_id, t, const=value, weak=weak)

    def cast_const(self, value, t) -> ir.Value:
        """A literal converted by an explicit constructor (``wp.uint32(-1)``): integers wrap into
        ``t``'s range, as a C cast does (a bare literal must fit: check_literal_ranges)."""
        if T.is_int(t) and isinstance(value, py.int) and not isinstance(value, py.bool):
            low, high = _int_range(t)
            value = (value - low) % (high - low + 1) + low
        return self.const(value, t)

    def assign(self, op, t, node, hint="") -> ir.Value:
        dst = self.new_value(t, hint) if t is not None else None
        self.stmts.append(ir.Assign(dst, op, self.src.loc(node)))
        return dst

    def call(self, name: str, args, node, template=(), discard=False) -> ir.Value | None:
        b: Builtin = REGISTRY[name]
        args = list(args)
        if any(T.is_tile(a.type) for a in args):
            from .tile_elementwise import tile_call_of_scalar_builtin

            mapped = tile_call_of_scalar_builtin(self, b, args, node)
            if mapped is not None:
                return mapped
        if b.unify_literals:
            args = self.unify(args)
        if any(isinstance(a.type, T.TupleType) for a in args):
            raise KernelTypeError(f"{name}() cannot take a tuple argument", self.src.loc(node))
        try:
            result = b.type_rule(tuple(a.type for a in args), tuple(template))
        except BuiltinTypeError as e:
            user = self.user_operator(name, args, node)
            if user is not None:
                return user
            label = f"{T.type_name(template[0])}()" if name == "construct" else _pretty(name)
            raise KernelTypeError(f"{label}{e.separator}{e}", self.src.loc(node)) from None
        if b.kernel_context and not self.is_kernel:
            raise KernelTypeError(f"wp.{name}() is only available inside a kernel", self.src.loc(node))
        return self.assign(ir.Call(b, tuple(args), tuple(template)), None if discard else result, node)

    def user_operator(self, name, args, node):
        """``a + b`` on types no builtin takes, through a ``@wp.func`` named ``add`` in the kernel's scope
        (Warp's operator overloading, e.g. for structs); None when there is none."""
        if name not in _OPERATORS or any(a.weak for a in args):
            return None
        func = self.src.lookup(name)
        if getattr(func, "_tw_specialize", None) is None:
            return None
        from .funcs import call_with_values

        return call_with_values(self, func, args, node)

    def unify(self, args):
        """Bare Python literals take the scalar type of the typed arguments (``x * 2.0`` in float64)."""
        typed = [T.scalar_of(a.type) for a in args if not a.weak and (T.is_scalar(a.type) or T.is_composite(a.type))]
        target = typed[0] if typed else None
        if target is None and any(a.weak and T.is_float(a.type) for a in args):
            target = T.float32
        out = []
        for a in args:
            if a.weak and target is not None and target is not T.bool_ and a.type is not T.bool_:
                if T.is_float(target) or isinstance(a.const, py.int):
                    a = self.const(a.const, target)
            out.append(a)
        return out

    def bind(self, name: str, value: ir.Value, node):
        """``name = value``: write in place into a carried value, else rebind the name."""
        current = self.symbols.get(name)
        if hasattr(current, "_tw_assign"):  # an arranged tile (tilewarp/blocks): assigning stores it
            current._tw_assign(self, value, node)
            return
        if isinstance(current, ir.Value) and current.mutable:
            value = self.coerce(value, current.type, node, f"variable '{name}'")
            self.stmts.append(ir.Assign(current, ir.Copy(value), self.src.loc(node)))
            return
        if value.mutable:  # never alias a carried value: it changes under the new name
            value = self.assign(ir.Copy(value), value.type, node, name)
        elif value.weak:
            value = self.const(value.const, value.type)
        self.symbols[name] = value

    def coerce(self, value, t, node, what):
        if value.weak and value.type != t:
            value = self.unify([ir.Value(0, t), value])[1]
        if value.type != t:
            raise KernelTypeError(f"{what} has type {T.type_name(t)} but is assigned {T.type_name(value.type)}",
                                  self.src.loc(node))
        return value

    # ---- dispatch ----------------------------------------------------------------------------

    def visit(self, node):
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is None:
            raise KernelSyntaxError(f"unsupported syntax in kernel code: {type(node).__name__}",
                                    self.src.loc(node))
        return method(node)

    def block(self, body):
        for stmt in body:
            self.visit(stmt)

    def value(self, node) -> ir.Value:
        """Lower an expression that must produce a value (not a module, type, or function)."""
        result = self.visit(node)
        if isinstance(result, ir.Value):
            return result
        return self.materialize(result, node)

    def materialize(self, obj, node) -> ir.Value:
        if hasattr(obj, "_tw_value"):  # a block program's operand read as a whole (tilewarp/blocks)
            return obj._tw_value(self, node)
        if isinstance(obj, (py.bool, py.int, py.float)):
            return self.const(obj)
        if isinstance(obj, T.Scalar):
            return self.const(obj.value, type(obj))
        if isinstance(obj, (T.VectorBase, T.MatrixBase)):
            s = T.scalar_of(type(obj))
            return self.call("construct", [self.const(v, s) for v in obj.numpy().reshape(-1)], node, (type(obj),))
        raise KernelTypeError(f"cannot use {_describe(obj)} as a value in kernel code", self.src.loc(node))

    # ---- expressions -------------------------------------------------------------------------

    def visit_Constant(self, node):
        if isinstance(node.value, (py.bool, py.int, py.float)):
            return self.const(node.value)
        raise KernelTypeError(f"unsupported constant {node.value!r}", self.src.loc(node))

    def visit_Name(self, node):
        if node.id in self.symbols:
            return self.symbols[node.id]
        obj = self.src.lookup(node.id)
        if obj is MISSING:
            obj = _builtin_name(node.id)
        if obj is MISSING:
            raise KernelNameError(f"name '{node.id}' is not defined", self.src.loc(node))
        key = capture_key(obj)
        if key is not None:  # compiled in as a constant: wp.launch warns if it is rebound later
            self.fn.captures.append((self.src.fn, node.id, key))
        return obj

    def visit_Attribute(self, node):
        base = self.visit(node.value)
        if not isinstance(base, ir.Value):
            if T.is_composite(base) and node.attr in ("dtype", "length") and not hasattr(base, node.attr):
                return _composite_attribute(base, node.attr)  # type(v).dtype, a.dtype.length
            if not hasattr(base, node.attr):
                raise KernelTypeError(f"{_describe(base)} has no attribute '{node.attr}'", self.src.loc(node))
            return getattr(base, node.attr)
        t = base.type
        if T.is_composite(t):  # v.x, q.w, t.p, t.q
            from .composites import read_attribute

            part = read_attribute(self, base, node)
            if part is not None:
                return part
        if T.is_composite(t) and node.attr in ("dtype", "length"):  # compile-time, as in Warp: v.dtype(0)
            value = _composite_attribute(t, node.attr)
            return self.const(value, T.int32) if node.attr == "length" else value
        if T.is_array(t) and node.attr == "shape":
            return self.call("shape", [base], node)
        if T.is_array(t) and node.attr in ("dtype", "ndim"):  # compile-time: arr.dtype(0) constructs
            return getattr(t, node.attr)
        if T.is_struct(t) and node.attr in t._tw_fields_:
            return self.call("struct_get", [base], node, (node.attr,))
        raise KernelTypeError(f"{T.type_name(t)} value has no attribute '{node.attr}'", self.src.loc(node))

    def visit_BinOp(self, node):
        name = BINARY.get(type(node.op).__name__)
        if name is None:
            raise KernelSyntaxError(f"unsupported operator {type(node.op).__name__}", self.src.loc(node))
        return self.call(name, [self.value(node.left), self.value(node.right)], node)

    def visit_UnaryOp(self, node):
        operand = self.value(node.operand)
        if isinstance(node.op, ast.USub) and operand.is_const and not isinstance(operand.const, py.bool):
            return ir.Value(operand.id, operand.type, const=-operand.const, weak=operand.weak)
        if isinstance(node.op, ast.Not):
            operand = self.truth(operand, node)
        return self.call(UNARY[type(node.op).__name__], [operand], node)

    def visit_Compare(self, node):
        folded = self.compare_constants(node)
        if folded is not None:
            return folded
        left, result = self.value(node.left), None
        for op, right_node in zip(node.ops, node.comparators):
            name = COMPARE.get(type(op).__name__)
            if name is None:
                raise KernelSyntaxError(f"unsupported comparison {type(op).__name__}", self.src.loc(node))
            right = self.value(right_node)
            cmp = self.call(name, [left, right], node)
            result = cmp if result is None else self.short_circuit(result, lambda c=cmp: c, True, node)
            left = right
        return result

    def compare_constants(self, node):
        """``ref.shape == (2,)``: a comparison of values known now (tuples, types) folds to a bool."""
        if not isinstance(node.left, (ast.Attribute, ast.Tuple, ast.Name)):
            return None
        def known(n):
            if isinstance(n, ast.Tuple):
                try:
                    return ast.literal_eval(n)
                except ValueError:
                    return None
            return self.visit(n) if isinstance(n, (ast.Attribute, ast.Name)) else None

        operands = [known(node.left)]
        if not isinstance(operands[0], (tuple, list, type)):
            return None
        operands += [known(c) for c in node.comparators]
        if any(v is None for v in operands):
            return None
        if any(isinstance(v, ir.Value) for v in operands[1:]):
            return None
        ops = {"Eq": lambda a, b: a == b, "NotEq": lambda a, b: a != b, "Is": lambda a, b: a is b,
               "IsNot": lambda a, b: a is not b}
        if not all(type(op).__name__ in ops for op in node.ops):
            return None
        result = all(ops[type(op).__name__](a, b) for op, a, b in zip(node.ops, operands, operands[1:]))
        return self.const(result)

    def visit_BoolOp(self, node):
        is_and = isinstance(node.op, ast.And)
        result = self.truth(self.value(node.values[0]), node)
        for operand in node.values[1:]:
            result = self.short_circuit(result, lambda o=operand: self.truth(self.value(o), node), is_and, node)
        return result

    def short_circuit(self, first, rest, is_and, node):
        """``first and rest()`` / ``first or rest()`` evaluating ``rest`` only when needed."""
        out = self.new_value(T.bool_, "cond")
        self.stmts.append(ir.Assign(out, ir.Copy(first), self.src.loc(node)))
        test = out if is_and else self.call("bool_not", [out], node)
        body, saved, before = [], self.stmts, dict(self.symbols)
        self.stmts = body
        self.stmts.append(ir.Assign(out, ir.Copy(rest()), self.src.loc(node)))
        self.stmts = saved
        orelse = []
        merged = self.merge_rebound(before, [self.symbols, before], [body, orelse], node)
        self.stmts.append(ir.If(test, body, orelse, (out, *merged), self.src.loc(node)))
        return out

    def merge_rebound(self, before, ends, bodies, node) -> tuple:
        """Names a conditional expression's branches rebind (a random state advanced by ``wp.randf``)
        become one merged value written at the end of each branch, as ``if`` statements merge."""
        merged = []
        for name, old in before.items():
            new = [end.get(name, old) for end in ends]
            if all(v is old for v in new) or not all(isinstance(v, ir.Value) for v in new):
                continue
            m = self.new_value(old.type, name)
            for v, body in zip(new, bodies):
                body.append(ir.Assign(m, ir.Copy(v), self.src.loc(node)))
            self.symbols[name] = m
            merged.append(m)
        return tuple(merged)

    def visit_IfExp(self, node):
        cond = self.truth(self.value(node.test), node)
        branches, before, ends = [], dict(self.symbols), []
        for expr in (node.body, node.orelse):
            saved, self.stmts, self.symbols = self.stmts, [], dict(before)
            branches.append((self.value(expr), self.stmts))
            self.stmts = saved
            ends.append(self.symbols)
        (a, body), (b, orelse) = branches
        self.symbols = dict(before)
        merged = self.merge_rebound(before, ends, [body, orelse], node)
        a, b = self.unify([a, b])
        if a.type != b.type:
            raise KernelTypeError(f"both sides of 'if/else' must have one type, got {T.type_name(a.type)} and "
                                  f"{T.type_name(b.type)}", self.src.loc(node))
        out = self.new_value(a.type, "select")
        body.append(ir.Assign(out, ir.Copy(a), self.src.loc(node)))
        orelse.append(ir.Assign(out, ir.Copy(b), self.src.loc(node)))
        self.stmts.append(ir.If(cond, body, orelse, (out, *merged), self.src.loc(node)))
        return out

    def visit_Tuple(self, node):
        """``(a, b)`` / ``return a, b``: one tuple value (literals take their default types)."""
        values = [self.value(e) for e in node.elts]
        if any(isinstance(v.type, T.TupleType) for v in values):
            raise KernelTypeError("tuples cannot contain tuples", self.src.loc(node))
        values = [self.const(v.const, v.type) if v.weak else v for v in values]
        t = T.TupleType(tuple(v.type for v in values))
        return self.call("make_tuple", values, node, (t,))

    def tuple_get(self, value, i, node) -> ir.Value:
        t = value.type.types[i]
        return self.assign(ir.Call(REGISTRY["tuple_get"], (value,), (i,)), t, node)

    def visit_Subscript(self, node):
        if self.names_adjoint(node):
            return self.adjoint_place(node).get()
        from .slices import has_slice, lower_slice

        base = self.visit(node.value)
        if hasattr(base, "_tw_subscript"):  # ref[...] of a block program (tilewarp/blocks)
            return base._tw_subscript(self, node)
        if isinstance(base, (tuple, list)):  # ref.shape[0], a closure's tuple: known now
            i = self.value(node.slice)
            if not (i.is_const and isinstance(i.const, py.int)) or not -len(base) <= i.const < len(base):
                raise KernelTypeError(f"a constant tuple of {len(base)} is indexed with a run-time value or out of "
                                      "range", self.src.loc(node))
            return base[i.const]
        if not isinstance(base, ir.Value):
            base = self.materialize(base, node.value)
        if T.is_tile(base.type):  # t[i, j], t[1:3], t[idx, :]: an element, a view or a gather
            from .tiles import tile_subscript

            return tile_subscript(self, base, node)
        if has_slice(node):  # a[1:3], a[i, ::2]: a view
            return lower_slice(self, node, base)
        if isinstance(base.type, T.TupleType):
            i = self.value(node.slice)
            n = len(base.type.types)
            if not (i.is_const and isinstance(i.const, py.int) and not isinstance(i.const, py.bool)):
                raise KernelTypeError("a tuple index must be a constant integer", self.src.loc(node))
            if not -n <= i.const < n:
                raise KernelTypeError(f"index {i.const} is out of range for a tuple of {n}", self.src.loc(node))
            return self.tuple_get(base, i.const % n, node)
        index_nodes = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        indices = [self.index(i) for i in index_nodes]
        if T.is_array(base.type):
            name = "load" if len(indices) == base.type.ndim else "view"
            return self.call(name, [base, *indices], node)
        indices = self.component_indices(base.type, indices, node)
        return self.call(component_builtin("extract", base.type, len(indices)), [base, *indices], node)

    def names_adjoint(self, node) -> bool:
        """``node`` (a subscript) is ``wp.adjoint[...]``, recognised without lowering anything."""
        v = node.value
        if isinstance(v, ast.Attribute) and v.attr == "adjoint" and isinstance(v.value, ast.Name):
            v = v.value
            obj = getattr(self.src.lookup(v.id), "adjoint", None) if v.id not in self.symbols else None
        else:
            obj = self.src.lookup(v.id) if isinstance(v, ast.Name) and v.id not in self.symbols else None
        return getattr(obj, "__tw_adjoint__", False) is True

    def adjoint_place(self, node):
        """``wp.adjoint[x]`` as a place; only @wp.func_grad bodies have one (autodiff/custom.py)."""
        raise KernelTypeError("wp.adjoint[...] can only be used inside a @wp.func_grad function",
                              self.src.loc(node))

    def component_indices(self, t, indices, node) -> list:
        """Constant vector/matrix indices checked against the shape; negative ones count from the end."""
        if not T.is_composite(t):
            return indices
        out = []
        for dim, i in zip(t._wp_shape_, indices):
            if i.is_const and isinstance(i.const, py.int) and not isinstance(i.const, py.bool):
                if not -dim <= i.const < dim:
                    raise KernelTypeError(f"index {i.const} is out of range for {T.type_name(t)} "
                                          f"(size {dim})", self.src.loc(node))
                i = self.const(i.const % dim, i.type)
            out.append(i)
        return out + indices[len(out):]

    def index(self, node) -> ir.Value:
        v = self.value(node)
        return self.const(v.const, T.int32) if v.weak and isinstance(v.const, py.int) else v

    def visit_Call(self, node):
        from .calls import lower_call

        return lower_call(self, node)

    def truth(self, v: ir.Value, node) -> ir.Value:
        if v.type is T.bool_:
            return v
        if T.is_scalar(v.type):
            return self.call("ne", [v, self.const(0, v.type)], node)
        raise KernelTypeError(f"a {T.type_name(v.type)} value has no truth value", self.src.loc(node))

    # ---- statements ----------------------------------------------------------------------------

    def visit_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        self.visit(node.value)

    def visit_Pass(self, node):
        pass

    def visit_Assert(self, node):
        # checked in debug builds only: the condition runs under `if (tw::debug_build())`, which
        # release builds fold away, as Warp compiles asserts out of release kernels
        debug = self.call("_debug_build", [], node)
        saved, self.stmts = self.stmts, []
        self.call("_assert", [self.truth(self.value(node.test), node)], node, discard=True)
        body, self.stmts = self.stmts, saved
        self.stmts.append(ir.If(debug, body, [], (), self.src.loc(node)))

    def visit_Assign(self, node):
        if len(node.targets) != 1:
            raise KernelSyntaxError("chained assignment (a = b = c) is not supported", self.src.loc(node))
        from .calls import assign_target

        assign_target(self, node.targets[0], node.value, node)

    def visit_AnnAssign(self, node):
        if node.value is None:
            raise KernelSyntaxError("a declaration needs a value", self.src.loc(node))
        from .calls import assign_target

        if isinstance(node.target, ast.Name):  # beyond Warp (no annotations): `x: wp.int8 = 5` is an int8
            try:
                t = T.value_type(self.src.evaluate(node.annotation, {}))
            except Exception as e:
                raise KernelTypeError(f"unsupported annotation ({type(e).__name__}: {e})",
                                      self.src.loc(node.annotation)) from None
            value = self.coerce(self.value(node.value), t, node, f"variable '{node.target.id}'")
            self.bind(node.target.id, value, node)
            return
        assign_target(self, node.target, node.value, node)

    def visit_AugAssign(self, node):
        from .calls import aug_assign

        aug_assign(self, node)

    def visit_Return(self, node):
        if hasattr(self, "inline_result"):  # the end of an inlined tile function (frontend/tiles.py)
            if node is not self.src.tree.body[-1]:
                raise KernelSyntaxError("a tile function may only return at its end", self.src.loc(node))
            self.inline_result = self.value(node.value) if node.value is not None else None
            return
        value = None
        if node.value is not None:
            if self.is_kernel:
                raise KernelSyntaxError("kernels cannot return a value", self.src.loc(node))
            value = self.value(node.value)  # `return a, b` is a tuple value (visit_Tuple)
            if value.weak:
                value = self.const(value.const, value.type)
        self.return_types.append(value.type if value is not None else None)
        self.stmts.append(ir.Return(value, self.src.loc(node)))

    def visit_FunctionDef(self, node):
        """A nested ``def`` only under a decorator that lowers it in place (``@pl.when(cond)``)."""
        if len(node.decorator_list) == 1 and isinstance(node.decorator_list[0], ast.Call):
            lower = getattr(self.visit(node.decorator_list[0].func), "_tw_lower_decorated", None)
            if lower is not None:
                return lower(self, node.decorator_list[0], node)
        raise KernelSyntaxError("functions cannot be defined inside kernel code", self.src.loc(node))

    def visit_If(self, node):
        from .control import lower_if

        lower_if(self, node)

    def visit_For(self, node):
        from .control import lower_for

        lower_for(self, node)

    def visit_While(self, node):
        from .control import lower_while

        lower_while(self, node)

    def visit_Break(self, node):
        self._loop_only(node, "break")
        self.stmts.append(ir.Break(self.src.loc(node)))

    def visit_Continue(self, node):
        self._loop_only(node, "continue")
        self.stmts.append(ir.Continue(self.src.loc(node)))

    def _loop_only(self, node, what):
        if self.loop_depth == 0:
            raise KernelSyntaxError(f"'{what}' outside a loop", self.src.loc(node))


def _composite_attribute(t, attr):
    """``dtype`` (the scalar type) or ``length`` (the component count) of a vector-like type."""
    return T.scalar_of(t) if attr == "dtype" else t._length_


def _builtin_name(name: str):
    """As in Warp, kernel code may name a builtin or a vector/matrix type without ``wp.`` when no
    global of that name hides it (``expect_eq(a, b)``, ``vec3(x)``): the names ``wp.`` exports."""
    b = public(name)
    return b if b is not None else T.PUBLIC_TYPES.get(name, MISSING)


def _describe(obj) -> str:
    if isinstance(obj, type):
        return f"type {obj.__name__}"
    name = getattr(obj, "__name__", None)
    return f"{type(obj).__name__} {name!r}" if name else f"{type(obj).__name__} value"


def _pretty(name: str) -> str:
    return {"add": "'+'", "sub": "'-'", "mul": "'*'", "div": "'/'", "mod": "'%'", "floordiv": "'//'",
            "matmul": "'@'", "neg": "unary '-'", "lt": "'<'", "le": "'<='", "gt": "'>'", "ge": "'>='",
            "eq": "'=='", "ne": "'!='"}.get(name, f"{name}()")


__all__ = ["Lowerer", "KernelError"]


def check_literal_ranges(body) -> None:
    """An integer literal must fit the type it ends up with (``x[0] = 3000000000`` into an int32
    array): C++ would wrap it silently. Explicit constructors (``wp.uint32(-1)``) still wrap."""
    for s in ir.walk(body):
        if isinstance(s, ir.Assign):
            op = s.op
            operands = (op.src,) if isinstance(op, ir.Copy) else op.args
        elif isinstance(s, ir.For):
            operands = (s.start, s.stop, s.step)
        else:
            continue
        for v in operands:
            if isinstance(v, ir.Value) and isinstance(v.const, py.int) and not isinstance(v.const, py.bool) \
                    and T.is_int(v.type) and not _fits(v.const, v.type):
                raise KernelTypeError(f"integer literal {v.const} does not fit {T.type_name(v.type)} (range "
                                      f"{_int_range(v.type)}); use a wider type, e.g. wp.int64({v.const}), or an "
                                      f"explicit constructor to wrap it", getattr(s, "loc", None))


def _int_range(t) -> tuple:
    bits = 8 * t._size_
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if t._kind_ == "int" else (0, (1 << bits) - 1)


def _fits(value: int, t) -> bool:
    low, high = _int_range(t)
    return low <= value <= high
