"""Bad kernel code: the right error class, located at the user's ``file:line`` with the source text.

The offending line of each kernel carries the marker comment ``# <- error``; the expected line
number is computed from the source, never hardcoded. No message may mention tilewarp's own files.
"""
import inspect
import os

import pytest

import tilewarp as wp
from tilewarp import KernelError, KernelSyntaxError, KernelTypeError

THIS_FILE = os.path.abspath(__file__)
MARK = "# <- error"


def marked_line(obj) -> tuple:
    """``(line number, code text)`` of the one line of ``obj``'s source carrying the marker."""
    lines, first = inspect.getsourcelines(obj)
    hits = [(first + k, text.split(MARK)[0].strip()) for k, text in enumerate(lines) if MARK in text]
    assert len(hits) == 1, f"{obj.__name__} must mark exactly one line"
    return hits[0]


def check(kernel, cls, *fragments, where=None):
    """Launching ``kernel`` raises ``cls`` located at the marked line of ``where`` (default: the kernel)."""
    line, text = marked_line(where or kernel)
    with pytest.raises(cls) as info:
        wp.launch(kernel, dim=1, inputs=[], device="cpu")
    msg = str(info.value)
    assert f"{THIS_FILE}:{line}:" in msg, msg
    assert text in msg, msg
    assert f"tilewarp{os.sep}" not in msg and "tilewarp/" not in msg, msg
    for fragment in fragments:
        assert fragment in msg, msg
    assert isinstance(info.value, KernelError) and info.value.loc.line == line
    return msg


# ---- unsupported syntax -------------------------------------------------------------------------


@wp.kernel
def k_with(a: wp.array(dtype=float)):
    i = wp.tid()
    with open("x"):  # <- error
        a[i] = 1.0


@wp.kernel
def k_lambda(a: wp.array(dtype=float)):
    i = wp.tid()
    f = lambda x: x + 1.0  # <- error  # noqa: E731
    a[i] = f(a[i])


@wp.kernel
def k_listcomp(a: wp.array(dtype=float)):
    i = wp.tid()
    xs = [a[j] for j in range(3)]  # <- error
    a[i] = xs[0]


@wp.kernel
def k_try(a: wp.array(dtype=float)):
    i = wp.tid()
    try:  # <- error
        a[i] = 1.0
    except Exception:
        pass


@wp.kernel
def k_for_list(a: wp.array(dtype=float)):
    i = wp.tid()
    for x in [1.0, 2.0]:  # <- error
        a[i] = x


@wp.kernel
def k_return_value(a: wp.array(dtype=float)):
    i = wp.tid()
    return a[i]  # <- error


@wp.kernel
def k_string(a: wp.array(dtype=float)):
    i = wp.tid()
    s = "text"  # <- error
    a[i] = 0.0


@wp.kernel
def k_component_of_temporary(a: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    wp.normalize(a[i])[0] = 1.0  # <- error


@pytest.mark.parametrize("kernel,fragment", [
    (k_component_of_temporary, "component assignment"), (k_with, "With"), (k_lambda, "Lambda"), (k_listcomp, "ListComp"), (k_try, "Try"),
    (k_for_list, "range"), (k_return_value, "return"),
], ids=lambda p: getattr(p, "key", None) or str(p))
def test_unsupported_syntax(kernel, fragment):
    check(kernel, KernelSyntaxError, fragment)


def test_string_constant():
    check(k_string, KernelTypeError, "'text'")


# ---- names and attributes ---------------------------------------------------------------------


@wp.kernel
def k_undefined(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = undefined_thing * 2.0  # <- error  # noqa: F821


@wp.kernel
def k_branch_only(a: wp.array(dtype=float)):
    i = wp.tid()
    if a[i] > 0.0:
        y = 1.0
    a[i] = y  # <- error  # noqa: F821


@wp.kernel
def k_wp_attr(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = wp.nonexistent(a[i])  # <- error


@wp.kernel
def k_vec_attr(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=float)):
    i = wp.tid()
    v = a[i]
    b[i] = v.q  # <- error


@wp.kernel
def k_vec2_z(a: wp.array(dtype=wp.vec2), b: wp.array(dtype=float)):
    i = wp.tid()
    b[i] = a[i].z  # <- error


def plain_python(x):
    return x


@wp.kernel
def k_python_call(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = plain_python(a[i])  # <- error


@pytest.mark.parametrize("kernel,fragment", [
    (k_undefined, "'undefined_thing' is not defined"), (k_branch_only, "'y' is not defined"),
    (k_wp_attr, "nonexistent"), (k_vec_attr, "'q'"), (k_vec2_z, "'z'"), (k_python_call, "plain_python"),
], ids=lambda p: getattr(p, "key", None) or str(p))
def test_names_and_attributes(kernel, fragment):
    check(kernel, KernelTypeError, fragment)


# ---- types --------------------------------------------------------------------------------------


@wp.kernel
def k_vec_plus_float(a: wp.array(dtype=wp.vec3), s: float):
    i = wp.tid()
    a[i] = a[i] + s  # <- error


@wp.kernel
def k_f32_plus_f64(a: wp.array(dtype=float), b: wp.array(dtype=wp.float64)):
    i = wp.tid()
    x = a[i]
    y = b[i]
    z = x + y  # <- error
    a[i] = z


@wp.kernel
def k_int_plus_float(a: wp.array(dtype=int), b: wp.array(dtype=float)):
    i = wp.tid()
    b[i] = a[i] * b[i]  # <- error


@wp.kernel
def k_store_wrong_dtype(a: wp.array(dtype=int), b: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = b[i]  # <- error


@wp.kernel
def k_loop_retype(a: wp.array(dtype=float)):
    i = wp.tid()
    s = int(0)
    for k in range(3):
        s = a[i]  # <- error
    a[i] = float(s)


@wp.kernel
def k_branch_types(a: wp.array(dtype=float)):
    i = wp.tid()
    if a[i] > 0.0:  # <- error
        y = 1.0
    else:
        y = i
    a[i] = float(y)


@wp.kernel
def k_ternary_types(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i] if i > 2 else i  # <- error


@wp.kernel
def k_float_index(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[a[i]]  # <- error


@wp.kernel
def k_too_many_indices(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i, 0] = 1.0  # <- error


@wp.kernel
def k_vec_times_vec(a: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    a[i] = a[i] * a[i]  # <- error


@wp.kernel
def k_matvec_shape(m: wp.array(dtype=wp.mat33), v: wp.array(dtype=wp.vec4)):
    i = wp.tid()
    v[i] = m[i] * v[i]  # <- error


@wp.kernel
def k_cross_vec2(a: wp.array(dtype=wp.vec2), b: wp.array(dtype=wp.vec2)):
    i = wp.tid()
    b[i] = wp.cross(a[i], b[i])  # <- error


@wp.kernel
def k_sqrt_int(a: wp.array(dtype=int)):
    i = wp.tid()
    a[i] = wp.sqrt(a[i])  # <- error


@wp.kernel
def k_not_vector(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.bool)):
    i = wp.tid()
    b[i] = not a[i]  # <- error


@wp.kernel
def k_vec_index_range(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=float)):
    i = wp.tid()
    b[i] = a[i][3]  # <- error


@wp.kernel
def k_mat_index_range(a: wp.array(dtype=wp.mat33)):
    i = wp.tid()
    m = a[i]
    m[1, -4] = 1.0  # <- error
    a[i] = m


@pytest.mark.parametrize("kernel,fragment", [
    (k_vec_index_range, "index 3 is out of range for vec3"), (k_mat_index_range, "index -4"),
    (k_vec_plus_float, "vec3, float32"), (k_f32_plus_f64, "float32, float64"), (k_int_plus_float, "'*'"),
    (k_store_wrong_dtype, "float32"), (k_loop_retype, "'s'"), (k_branch_types, "'y'"),
    (k_ternary_types, "if/else"), (k_float_index, "integer"), (k_too_many_indices, "indices"),
    (k_vec_times_vec, "ambiguous"), (k_matvec_shape, "'*'"), (k_cross_vec2, "cross"), (k_sqrt_int, "sqrt"),
    (k_not_vector, "truth value"),
], ids=lambda p: getattr(p, "key", None) or str(p))
def test_type_errors(kernel, fragment):
    check(kernel, KernelTypeError, fragment)


# ---- builtin and function calls ------------------------------------------------------------------


@wp.kernel
def k_sqrt_two_args(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = wp.sqrt(a[i], 2.0)  # <- error


@wp.kernel
def k_dot_one_arg(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=float)):
    i = wp.tid()
    b[i] = wp.dot(a[i])  # <- error


@wp.kernel
def k_clamp_two_args(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = wp.clamp(a[i], 0.0)  # <- error


@wp.kernel
def k_vec_ctor_count(a: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    a[i] = wp.vec3(1.0, 2.0)  # <- error


@wp.kernel
def k_tid_args(a: wp.array(dtype=float)):
    i = wp.tid(0)  # <- error
    a[i] = 0.0


@wp.kernel
def k_len_two_args(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = float(len(a, a))  # <- error


@wp.kernel
def k_identity_not_constant(a: wp.array(dtype=float)):
    i = wp.tid()
    n = i + 3  # a value known only when the kernel runs (n = 3 would be a constant, as in Warp)
    a[i] = wp.identity(n=n, dtype=float)[0, 0]  # <- error


@wp.func
def two_args(x: float, y: float):
    return x + y


@wp.kernel
def k_func_missing_arg(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = two_args(a[i])  # <- error


@wp.kernel
def k_func_extra_arg(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = two_args(a[i], 1.0, 2.0)  # <- error


@wp.kernel
def k_func_bad_keyword(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = two_args(a[i], z=1.0)  # <- error


@wp.kernel
def k_func_arg_type(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=float)):
    i = wp.tid()
    b[i] = two_args(a[i], 1.0)  # <- error


@pytest.mark.parametrize("kernel,fragment", [
    (k_sqrt_two_args, "sqrt"), (k_dot_one_arg, "dot"), (k_clamp_two_args, "clamp"),
    (k_vec_ctor_count, "vec3"), (k_len_two_args, "len()"), (k_identity_not_constant, "compile-time constant"),
    (k_func_missing_arg, "'y'"), (k_func_extra_arg, "two_args"), (k_func_bad_keyword, "'z'"),
    (k_func_arg_type, "two_args"),
], ids=lambda p: getattr(p, "key", None) or str(p))
def test_call_errors(kernel, fragment):
    check(kernel, KernelTypeError, fragment)


def test_tid_with_arguments():
    check(k_tid_args, KernelSyntaxError, "tid")


# ---- errors inside functions point into the function ----------------------------------------


@wp.func
def bad_inner(v: wp.vec3):
    return wp.length(v) + v  # <- error


@wp.func
def calls_bad_inner(v: wp.vec3):
    return bad_inner(v) * 2.0


@wp.kernel
def k_error_in_nested_func(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=float)):
    i = wp.tid()
    b[i] = calls_bad_inner(a[i])


@wp.func
def returns_two_types(x: float):
    if x > 0.0:
        return x
    return 1  # noqa: the mismatch is reported at the def line


@wp.kernel
def k_func_return_types(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = returns_two_types(a[i])


def test_error_inside_nested_function():
    check(k_error_in_nested_func, KernelTypeError, "float32, vec3", where=bad_inner)


def test_function_with_two_return_types():
    lines, first = inspect.getsourcelines(returns_two_types)
    def_line = first + next(k for k, t in enumerate(lines) if t.lstrip().startswith("def "))
    with pytest.raises(KernelTypeError, match="returns different types") as info:
        wp.launch(k_func_return_types, dim=1, inputs=[], device="cpu")
    assert f"{THIS_FILE}:{def_line}:" in str(info.value)


# ---- kernel signatures ------------------------------------------------------------------------


@wp.kernel
def k_missing_annotation(a: wp.array(dtype=float), s):  # <- error
    i = wp.tid()
    a[i] = s


@wp.kernel
def k_bad_annotation(a: wp.array(dtype=float), s: str):  # <- error
    i = wp.tid()
    a[i] = 0.0


def test_missing_annotation():
    check(k_missing_annotation, KernelTypeError, "'s'", "annotation")


def test_unsupported_annotation():
    check(k_bad_annotation, KernelTypeError, "'s'")


def test_error_is_raised_again_on_every_launch():
    """A failed kernel stays failed (and keeps pointing at the user's line)."""
    first = check(k_vec_plus_float, KernelTypeError)
    assert check(k_vec_plus_float, KernelTypeError) == first
