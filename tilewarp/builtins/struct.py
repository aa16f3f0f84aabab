"""``@wp.struct`` values: construction, field reads and field updates (value semantics)."""
from __future__ import annotations

from ..language import types as T
from ..language.structs import cpp_field
from .registry import Builtin, fail, names, register


def _fields(t) -> dict:
    if not T.is_struct(t):
        fail(f"expects a struct, got {T.type_name(t)}")
    return t._tw_fields_


def _field_type(t, field):
    fields = _fields(t)
    if field not in fields:
        fail(f"struct {T.type_name(t)} has no field '{field}'")
    return fields[field]


def _new(args, template):
    """``S()``, ``S(a, b)``, ``S(x=a)``: ``template`` is (struct type, names of the given fields)."""
    t, given = template
    for name, a in zip(given, args):
        if a != _field_type(t, name):
            fail(f"field '{name}' of {T.type_name(t)} is {T.type_name(_field_type(t, name))}, "
                 f"got {T.type_name(a)}")
    return t


def _new_cpp(args, template):
    t, given = template
    values = dict(zip(given, args))
    fields = list(t._tw_fields_)
    while fields and fields[-1] not in values:  # trailing members value-initialise (zero) anyway
        fields.pop()
    return f"{t._cpp_}{{{', '.join(values.get(f, '{}') for f in fields)}}}"


def _get(args, template):
    (s,) = args
    return _field_type(s, template[0])


def _set(args, template):
    s, value = args
    expected = _field_type(s, template[1])
    if value != expected:
        fail(f"field '{template[1]}' of {T.type_name(s)} is {T.type_name(expected)}, got ({names([value])})")
    return s


# Adjoints (given the arguments' C++, their adjoints', the result's adjoint and the template). A
# struct's adjoint is a struct of the same type; array fields are skipped (gradient arrays are
# computed forward, never accumulated), and tw::adj_accum has an overload per emitted struct.
def _adj_new(a, adj, adj_ret, template):
    t, given = template
    parts = [f"tw::adj_accum({g}, {adj_ret}.{cpp_field(name)})" for name, g in zip(given, adj)
             if not T.is_array(_field_type(t, name))]
    return "; ".join(parts) or "(void)0"


def _adj_get(a, adj, adj_ret, template):
    # never called for an array field: the reverse pass computes that adjoint forward
    return f"tw::adj_accum({adj[0]}.{cpp_field(template[0])}, {adj_ret})"


def _adj_set(a, adj, adj_ret, template):
    t, field = template
    if T.is_array(_field_type(t, field)):
        return f"tw::adj_accum({adj[0]}, {adj_ret})"
    # the replaced field's adjoint goes to the value, the rest to the original struct
    f = cpp_field(field)
    return (f"tw::adj_accum({adj[1]}, {adj_ret}.{f}); "
            f"{{ {t._cpp_} rest = {adj_ret}; rest.{f} = {{}}; tw::adj_accum({adj[0]}, rest); }}")


register(
    Builtin("struct_new", _new, "", unify_literals=False, emit=_new_cpp, adjoint="tw::adj_struct_new",
            adjoint_emit=_adj_new),
    Builtin("struct_get", _get, "", unify_literals=False, adjoint="tw::adj_struct_get",
            emit=lambda a, t: f"{a[0]}.{cpp_field(t[0])}", adjoint_emit=_adj_get),
    # template (struct type, field): a copy of the struct with one field replaced
    Builtin("struct_set", _set, "tw::with_field", unify_literals=False, adjoint="tw::adj_with_field",
            emit=lambda a, t: f"tw::with_field({a[0]}, &{t[0]._cpp_}::{cpp_field(t[1])}, {a[1]})",
            adjoint_emit=_adj_set),
)
