"""Bad input: every unsupported construct raises a CompileError located in this very file.

Each case names a function below, the line (counted from its ``def``) and the exact source text
the caret must underline, and a fragment of the message. The checks: the exception is a
CompileError (never an internal KeyError, ValueError...), its header is ``path:LINE:COL: error:``
with this file's path, the offending line is shown with a caret under the construct, and a
``hint:`` says what to write instead.
"""

import importlib.util
import linecache
import math
import os

import numpy as np
import pytest

import adcompiler
from adcompiler.frontend.reading.module import load_module
from adcompiler.api.signature import bind_arguments

SCALE = 2.0
WEIGHTS = np.ones(3)
X = np.array([0.5, -1.0, 2.0])


# ---- unsupported syntax ---------------------------------------------------------------------
def uses_print(x):
    print(x)
    return x.sum()


def uses_print_value(x):
    shown = print(x)
    return x.sum()


def uses_try(x):
    try:
        y = x * 2.0
    except ValueError:
        y = x
    return y.sum()


def uses_yield(x):
    yield x


def uses_class(x):
    class Inner:
        pass
    return x.sum()


def uses_with(x):  # (np.errstate compiles: tests/frontend/test_raise_and_errstate.py)
    with np.printoptions(precision=3):
        y = x * 2.0
    return y.sum()


def uses_global(x):
    global SCALE
    return (x * SCALE).sum()


def uses_for(x):
    for i in range(3):
        x = x * 2.0
    else:
        x = x + 1.0
    return x.sum()


def uses_import(x):
    import math as m
    return x.sum() * m.pi


def uses_assert(x):
    assert np.all(x > 0.0), x[0]  # (checked while running; its message must be static)
    return x.sum()


def uses_setitem(x):
    x.real[0] = 1.0
    return x.sum()


def uses_setitem_augmented(x):
    y = x.sum()
    y[0] += 1.0
    return y


def uses_shift(x):
    return (x << 1).sum()


def shifts_a_traced_int(x):
    n = int(np.sum(x))
    return np.sum(x) * (n << 1)


def uses_chained_compare(x):
    return np.where(0.0 < x < 1.0, x, 0.0).sum()


# ---- unsupported functions and names --------------------------------------------------------
def uses_sinc(x):
    return np.i0(x).sum()


def uses_unique(x):
    return np.unique(x).sum()   # its shape depends on the values


def uses_tensorinv(x):
    return np.linalg.tensorinv(x, ind=1).sum()


def uses_builtin_sum(x):
    return sum(x)


def uses_undefined(x):
    return (x * SCALEE).sum()


def uses_unknown_method(x):
    return x.repeat(2).sum()


def uses_math_on_array(x):
    return math.exp(x).sum()


def uses_mask(x):   # (x[x > 0.0].sum() compiles: tests/frontend/test_masked_reductions.py)
    return x[x > 0.0].cumsum()


def uses_mask_list(x):  # a list of bools is a mask known while compiling: this one is too short
    return x[[True, False]].sum()


def uses_float_index(x):
    return x[1.5]


def uses_traced_slice(x):
    n = x.sum()
    return x[:n].sum()


# ---- calls NumPy would reject, or that adcompiler cannot take --------------------------------
def uses_out(x):
    return np.exp(x, x).sum()


def uses_where_one_argument(x):
    return np.where(x > 0.0)[0].sum()


def uses_unsupported_keyword(x):
    return np.sum(x, where=x > 0.0)


def uses_reshape_order(x):
    return x.reshape(3, 1, order="F").sum()


def uses_traced_axis(x):
    return x.sum(axis=x).sum()


def uses_missing_axis(x):
    return np.expand_dims(x).sum()


def uses_bad_shapes(x):
    return (x + np.ones(5)).sum()


def uses_bad_reshape(x):
    return x.reshape(7).sum()


def uses_out_of_bounds(x):
    return x[10]


def uses_bad_axis(x):
    return x.sum(axis=3)


def uses_len_of_scalar(x):
    s = x.sum()
    return s * len(s)


def uses_unpack_mismatch(x):
    a, b = x, x, x
    return a.sum()


def _helper(v, k=1.0):
    return (v * k).sum()


def calls_helper_badly(x):
    return _helper(x, 1.0, 2.0)


def _helper_with_sinc(v):
    return np.i0(v) * 2.0


def calls_helper_with_sinc(x):
    return _helper_with_sinc(x).sum()


# ---- names Python itself would reject -------------------------------------------------------
def uses_local_before_assignment(x):
    y = x * SCALE
    SCALE = 3.0
    return y.sum()


def uses_unicode_names(x):
    größe = x * 2.0
    return np.i0(größe).sum()


# ---- in-place updates NumPy would refuse, or that views make ambiguous -----------------------
def updates_int_array(x):
    counts = np.ones(3, dtype=np.int64)
    counts *= 1.5
    return (x * counts).sum()


def updates_with_growth(x):
    y = x * 1.0
    y *= np.ones((2, 3))
    return y.sum()


def updates_global(x):
    w = WEIGHTS
    w *= 2.0
    return (x * w).sum()


def reads_stale_view(x):
    y = x * 1.0
    head = y[:2]
    y *= 2.0
    return head.sum()


def reads_base_of_updated_view(x):
    y = x * 1.0
    t = y.T
    t += 1.0
    return y.sum()


def updates_alias_in_branch(x):
    y = x * 1.0
    z = y
    while x.sum() > y.sum():
        y[0] = 2.0
    return (z * x).sum()


def _double_if_positive(v, x):
    if x.sum() > 0.0:
        v *= 2.0
    return v.sum()


def updates_callers_array_in_branch(x):
    y = x * 1.0
    return _double_if_positive(y, x) + (y * x).sum()


# ---- results that cannot be differentiated -------------------------------------------------
def returns_vector(x):
    return x * 2.0


def returns_int(x):
    return (x > 0.0).sum()


def returns_two(x):
    return x.sum(), x.max()


def returns_nothing(x):
    y = x * 2.0


def param_named_like_a_module(x, math=2.0):   # the generated body reads the module `math`
    return np.sum(x * math)


# (function, line offset from its def, the text under the caret, a fragment of the message)
CASES = [
    (uses_print, 1, "print(x)", "`print` is not supported"),
    (uses_print_value, 1, "print(x)", "`print` is not supported"),
    (uses_try, 1, "try:", "`try` is not supported"),
    (uses_yield, 1, "yield x", "generators (`yield`)"),
    (uses_class, 1, "class Inner:", "`class` definition is not supported"),
    (uses_with, 1, "with np.printoptions(precision=3):", "`with` is not supported"),
    (uses_global, 1, "global SCALE", "`global` is not supported"),
    (uses_for, 1, "for i in range(3):", "`for ... else` is not supported"),
    (uses_import, 1, "import math as m", "`import` inside a compiled function"),
    (uses_assert, 1, "x[0]", "the exception's message reads a traced value"),
    (uses_setitem, 1, "x.real[0]", "assign into a named array"),
    (uses_setitem_augmented, 2, "y", "is not an array that can be assigned into"),
    (uses_shift, 1, "x << 1", "`<<` on arrays is not supported"),
    (shifts_a_traced_int, 2, "n << 1", "`<<` on traced values is not supported"),
    (uses_chained_compare, 1, "0.0 < x", "a chained comparison tests its truth value"),
    (uses_sinc, 1, "np.i0", "`np.i0` has no derivative rule"),
    (uses_unique, 1, "np.unique", "`np.unique` is not supported in a compiled function: its "
     "result's shape depends on the values"),
    (uses_tensorinv, 1, "np.linalg.tensorinv",
     "`np.linalg.tensorinv` has no derivative rule"),
    (uses_builtin_sum, 1, "sum", "calling `sum` is not supported"),
    (uses_undefined, 1, "SCALEE", "name `SCALEE` is not defined"),
    (uses_unknown_method, 1, "x.repeat", "attribute `.repeat` is not supported"),
    (uses_math_on_array, 1, "math.exp(x)", "takes a Python number, but this is an array"),
    (uses_mask, 1, "x[x > 0.0]", "boolean mask"),
    (uses_mask_list, 1, "x[[True, False]]", "boolean mask"),
    (uses_float_index, 1, "x[1.5]", "cannot index with a `float`"),
    (uses_traced_slice, 2, ":n", "slice bound must be known when compiling"),
    (uses_out, 1, "np.exp(x, x)", "takes 1 positional argument here, but 2 were given"),
    (uses_where_one_argument, 1, "np.where(x > 0.0)", "with one argument"),
    (uses_unsupported_keyword, 1, "np.sum(x, where=x > 0.0)", "keyword argument `where=`"),
    (uses_reshape_order, 1, 'x.reshape(3, 1, order="F")', "order='C'"),
    (uses_traced_axis, 1, "x.sum(axis=x)", "needs `axis=` known when compiling"),
    (uses_missing_axis, 1, "np.expand_dims(x)", "missing the required argument `axis`"),
    (uses_bad_shapes, 1, "x + np.ones(5)", "cannot be broadcast"),
    (uses_bad_reshape, 1, "x.reshape(7)", "cannot reshape array of size 3"),
    (uses_out_of_bounds, 1, "x[10]", "index 10 is out of bounds"),
    (uses_bad_axis, 1, "x.sum(axis=3)", "axis 3 is out of bounds"),
    (uses_len_of_scalar, 2, "len(s)", "has no length"),
    (uses_unpack_mismatch, 1, "a, b", "cannot unpack this value into 2 names"),
    (calls_helper_badly, 1, "_helper(x, 1.0, 2.0)",
     "_helper() takes from 1 to 2 positional arguments but 3 were given"),
    (_helper_with_sinc, 1, "np.i0", "`np.i0` has no derivative rule"),
    (uses_local_before_assignment, 1, "SCALE", "local variable `SCALE` is read before"),
    (uses_unicode_names, 2, "np.i0", "`np.i0` has no derivative rule"),
    (updates_int_array, 2, "counts *= 1.5", "cannot store the float64 result in the int64"),
    (updates_with_growth, 2, "y *= np.ones((2, 3))", "would change `y`'s shape from (3,)"),
    (updates_global, 2, "w *= 2.0", "module global or a closure"),
    (reads_stale_view, 4, "head", "`head` shares memory with `y`, which `y *= 2.0` (line"),
    (reads_base_of_updated_view, 4, "y", "`y` shares memory with `t`"),
    (updates_alias_in_branch, 4, "y[0] = 2.0", "names the same array"),
    (_double_if_positive, 2, "v *= 2.0", "would also change `y`"),
    (returns_vector, 1, "return x * 2.0", "use adcompiler.vjp"),
    (returns_int, 1, "return (x > 0.0).sum()", "only floating results"),
    (returns_two, 1, "return x.sum(), x.max()", "returns 2 values"),
    (returns_nothing, 0, "def returns_nothing(x):", "`returns_nothing` "),
    (param_named_like_a_module, 0, "math", "parameter `math` has the name of the module `math`"),
]


def compile_error(f, *args):
    """The CompileError that compiling and running ``grad(f)`` raises (and nothing else)."""
    with pytest.raises(adcompiler.CompileError) as info:
        adcompiler.grad(f)(*(args or (X.copy(),)))
    return info.value


def assert_points_at(err, lineno, construct):
    """`err` reads `path:LINE:COL: error: ...`, the line, a caret under `construct`, a hint."""
    line = linecache.getline(__file__, lineno).rstrip("\n")
    col = line.index(construct)
    header, shown, caret, *rest = str(err).split("\n")
    assert os.path.samefile(err.filename, __file__)
    assert err.lineno == lineno
    assert header.startswith(f"{err.filename}:{lineno}:{col + 1}: error: "), header
    assert shown == "    " + line.strip()
    indent = len(line) - len(line.lstrip())
    assert caret == "    " + " " * (col - indent) + "^" * len(construct), f"\n{shown}\n{caret}"
    assert rest and rest[-1].startswith("hint: ") and len(rest[-1]) > len("hint: ") + 5


@pytest.mark.parametrize("f, offset, construct, message", CASES,
                         ids=[case[0].__name__ for case in CASES])
def test_located_compile_error(f, offset, construct, message):
    callers = {_helper_with_sinc: calls_helper_with_sinc,   # errors inside a callee,
               _double_if_positive: updates_callers_array_in_branch}   # reached by its caller
    err = compile_error(callers.get(f, f))
    assert message in str(err), str(err)
    assert_points_at(err, f.__code__.co_firstlineno + offset, construct)


def test_unicode_columns_count_characters():
    err = compile_error(uses_unicode_names)
    line = linecache.getline(__file__, err.lineno)
    assert line.index("np.i0") + 1 == err.location.col + 1 == int(str(err).split(":")[2])


def test_inlined_call_errors_read_like_python():
    err = compile_error(calls_helper_badly)
    with pytest.raises(TypeError) as python:
        _helper(X, 1.0, 2.0)
    assert str(python.value) in err.message
    assert "hint: _helper's parameters: v, k=1.0" in str(err)


def test_lambda_is_rejected_at_its_line():
    f = lambda x: (x * 2.0).sum()  # noqa: E731
    err = compile_error(f)
    assert err.message.startswith("this is a lambda")
    assert_points_at(err, f.__code__.co_firstlineno, "lambda")


def test_the_error_is_raised_when_the_gradient_is_first_called():
    g = adcompiler.grad(uses_sinc)       # building the transform does not compile
    with pytest.raises(adcompiler.CompileError):
        g.specialize(X)


def test_errors_point_into_the_users_own_module_file(tmp_path):
    path = tmp_path / "user_model.py"
    path.write_text("import numpy as np\n\n\ndef loss(x):\n    y = x * 2.0\n"
                    "    return np.i0(y).sum()\n")
    spec = importlib.util.spec_from_file_location("user_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    err = compile_error(module.loss)
    assert err.filename == str(path) and err.lineno == 6
    assert str(err).split("\n")[:3] == [
        f"{path}:6:12: error: `np.i0` has no derivative rule in adcompiler",
        "    return np.i0(y).sum()",
        "           ^^^^^"]


def test_static_module_loading_takes_a_constant_wrt_and_locates_a_computed_one(tmp_path):
    """A module-level literal (``WRT = ('x',)``) is read without running the module; a computed
    ``wrt`` is an error of that function only."""
    path = tmp_path / "marked.py"
    path.write_text("import adcompiler\nWRT = ('x',)\nBAD = tuple(['x'])\n\n"
                    "@adcompiler.grad(wrt=WRT)\ndef loss(x):\n    return x.sum()\n\n\n"
                    "@adcompiler.grad(wrt=BAD)\ndef other(x):\n    return x.sum()\n")
    module = load_module(str(path))
    assert module.function("loss") is not None
    with pytest.raises(adcompiler.CompileError) as info:
        module.function("other")
    assert str(info.value).startswith(f"{path}:10:22: error: wrt=BAD is not a literal")
    assert "hint: " in str(info.value)


# ---- shape mismatches in products and joins ---------------------------------------------------
def uses_bad_matmul(x):
    return (x @ np.ones(5)).sum()


def uses_bad_stack(x):
    return np.stack([x, x[:2]]).sum()


@pytest.mark.parametrize("f, construct", [(uses_bad_matmul, "x @ np.ones(5)"),
                                          (uses_bad_stack, "np.stack([x, x[:2]])")])
def test_shape_mismatch_in_linalg_and_joining_is_located(f, construct):
    try:
        adcompiler.grad(f)(X.copy())
    except adcompiler.CompileError as err:
        assert_points_at(err, f.__code__.co_firstlineno + 1, construct)
    except Exception as exc:
        pytest.fail(f"{type(exc).__name__} instead of a CompileError: {exc}")
    else:
        pytest.fail("no error")


# ---- the result must be a scalar under grad --------------------------------------------------
def test_non_scalar_result_mentions_vjp():
    err = compile_error(returns_vector)
    assert "grad needs a scalar result" in err.message and "(3,)" in err.message
    assert "vjp" in str(err)


# ---- arguments ------------------------------------------------------------------------------
def two_inputs(x, w, *, scale=1.0):
    return (x * w * scale).sum()


BAD_CALLS = [((X,), {}), ((X, X, X), {}), ((X, X), {"shift": 1.0}), ((X,), {"x": X}),
             ((), {"w": X}), ((X, X, 2.0), {})]


@pytest.mark.parametrize("args, kwargs", BAD_CALLS)
def test_bind_arguments_raises_pythons_own_type_error(args, kwargs):
    with pytest.raises(TypeError) as python:
        two_inputs(*args, **kwargs)
    with pytest.raises(TypeError) as ours:
        bind_arguments(two_inputs, args, kwargs)
    assert str(ours.value) == str(python.value)


def test_bind_arguments_applies_defaults():
    assert bind_arguments(two_inputs, (1.0,), {"w": 2.0}) == {"x": 1.0, "w": 2.0, "scale": 1.0}


@pytest.mark.parametrize("args, kwargs", BAD_CALLS)
def test_wrong_arguments_give_pythons_type_error(args, kwargs):
    with pytest.raises(TypeError) as python:
        two_inputs(*args, **kwargs)
    with pytest.raises(TypeError) as ours:
        adcompiler.grad(two_inputs)(*args, **kwargs)
    assert str(ours.value) == str(python.value)


def test_wrong_arguments_raise_type_error_not_compile_error():
    with pytest.raises(TypeError, match="'w'"):
        adcompiler.grad(two_inputs)(X)


@pytest.mark.parametrize("value", [3, True, np.arange(3), np.array([True, False, True])])
def test_integer_inputs_cannot_be_differentiated(value):
    with pytest.raises(TypeError, match="cannot differentiate with respect to 'w'") as info:
        adcompiler.grad(two_inputs, wrt="w")(X, value)
    assert "float" in str(info.value)


@pytest.mark.parametrize("wrt, fragment", [("z", "wrt='z' is not a parameter of two_inputs"),
                                           (5, "wrt=5: two_inputs has 3 parameters"),
                                           (("x", "x"), "names a parameter twice"),
                                           ((), "wrt is empty")])
def test_wrt_must_name_parameters(wrt, fragment):
    with pytest.raises(ValueError) as info:
        adcompiler.grad(two_inputs, wrt=wrt)
    assert fragment in str(info.value)
    if fragment.startswith("wrt="):
        assert "x, w, scale" in str(info.value)
