"""The guards of standalone gradients take only what ``_dispatch`` would send to the same body.

A standalone module's gradient tests its arguments against each compiled signature inline and
calls the body; a call no guard takes goes to ``_dispatch``, which raises the TypeError naming what
was compiled. Random calls near each signature (other dtypes, ranks, sizes, Python floats against
arrays and NumPy scalars, static values, lists, GPU arrays for NumPy code and NumPy arrays for
GPU code) check that a guard never takes a call that ``_dispatch`` refuses or sends elsewhere, and
that every call of a compiled signature with plain arguments takes its guard. Compiled modules,
imported where adcompiler is not importable, raise the same errors as before.
"""

import textwrap
import types

import numpy as np
import pytest

from adcompiler.aot import guards as standalone_guards
from adcompiler.runtime.dispatch import _Signatures, _dispatch, _fits
from tests import fake_cupy
from tests.cli.test_cli import COUNT_SLOW, MODES, SAMPLES, adcompiler, run_isolated, write

F64, F32 = "float64", "float32"
TABLES = {   # name: (parameters, [signature], least, device)
    "affine": (("W", "b", "x"), [(("array", F64, ("d1", "d2")), ("array", F64, ("d2",)),
                                  ("array", F64, ("d3", "d1")))], 2, False),
    "mixed": (("x", "c", "k", "f"), [
        (("array", F64, (5, 1, 7)), ("array", F32, (7,)), ("static", "int", 4), ("float",)),
        (("array", F64, ("d1", 1, "d2")), ("array", F32, ("d2",)), ("static", "int", 3),
         ("float",)),
        (("array", F64, ("d1", 1, "d2")), ("array", F32, (2,)), ("static", "bool", True),
         ("array", F64, ())),
    ], 2, False),
    "statics": (("a", "mode", "axes", "flag"), [
        (("array", F64, ("d1", "d1")), ("static", "str", "mean"), ("static", "tuple", (0, 1)),
         ("static", "NoneType", None)),
        (("array", F64, (3, 3)), ("static", "str", "sum"), ("static", "tuple", (1,)),
         ("static", "bool", False)),
    ], 2, False),
    # parameters named like the guards' locals: the guards must not overwrite them
    "names": (("d1", "d1_1", "d2"), [(("array", F64, ("d1", "d1")), ("array", F64, ("d2",)),
                                      ("float",))], 3, False),
    "window": (("x",), [(("array", F64, (2,)),), (("array", F64, ("d1",)),)], 3, False),
    "gpu": (("W", "b", "x"), [(("array", F64, ("d1", "d2")), ("array", F64, ("d2",)),
                               ("array", F64, ("d3", "d1")))], 2, True),
}


def test_patterns_fit_any_size_of_at_least_least_the_same_symbol_the_same_size():
    pattern = (("array", "float64", ("d1", 1, "d2")), ("array", "float64", ("d2",)), ("float",),
               ("static", "int", 3))
    def sig(a, b, c=("float",), k=3):
        return (("array", "float64", a), ("array", "float64", b), c, ("static", "int", k))
    assert _fits(pattern, sig((5, 1, 7), (7,)), 2)
    assert _fits(pattern, sig((4, 1, 4), (4,)), 2)          # sizes may coincide
    assert not _fits(pattern, sig((5, 1, 7), (6,)), 2)      # d2 twice, two sizes
    assert not _fits(pattern, sig((5, 2, 7), (7,)), 2)      # a size of 1 is part of the key
    assert not _fits(pattern, sig((1, 1, 7), (7,)), 2)      # so is a size of 1 for a symbol
    assert not _fits(pattern, sig((5, 1, 7), (7,), k=4), 2)  # static values are exact
    assert not _fits(pattern, sig((5, 1), (7,)), 2)         # rank
    assert not _fits(pattern, sig((2, 1, 7), (7,)), 3)      # least
    assert not _fits(pattern, sig((5, 1, 7), (7,), c=("array", "float64", ())), 2)


def dispatcher(name):
    """The generated dispatcher of a table, run with bodies that return their name and
    arguments, and a ``_dispatch`` that marks what it serves as the slow path."""
    params, signatures, least, device = TABLES[name]
    bodies = [f"_body_{i}" for i in range(len(signatures))]
    namespace = {"np": np, "cp": types.SimpleNamespace(ndarray=fake_cupy.ndarray)}
    for body in bodies:
        namespace[body] = lambda *args, body=body: (body, args)
    table = _Signatures(name, params, f"example_{name}",
                        {s: namespace[b] for s, b in zip(signatures, bodies)}, device, least)
    namespace["_T"] = table
    namespace["_dispatch"] = lambda t, args: ("slow", _dispatch(t, args))
    lines, dtypes = standalone_guards.render(
        list(params), list(zip(signatures, bodies)), least, device,
        lambda call: [f"return {call}"], f"_dispatch(_T, ({', '.join(params)},))",
        {"_T", "np", "cp", "_dispatch"})
    namespace.update({standalone_guards.dtype_constant(d): np.dtype(d) for d in dtypes})
    source = f"def f({', '.join(params)}):\n" + "\n".join(lines) + "\n"
    exec(compile(source, f"<{name}>", "exec"), namespace)
    return namespace["f"], table


def plain(entry, sizes, device, rng):
    """An argument of ``entry``'s signature, as a user passes it."""
    if entry[0] == "float":
        return float(rng.normal())
    if entry[0] == "static":
        return entry[2]
    shape = tuple(sizes[d] if isinstance(d, str) else d for d in entry[2])
    array = rng.normal(size=shape).astype(entry[1])
    return fake_cupy.ndarray(array) if device else array


def mutated(value, entry, device, rng):
    """``value`` changed in one way a call can differ from the signature (or not at all)."""
    array = value._a if isinstance(value, fake_cupy.ndarray) else np.asarray(value)
    if entry[0] == "static":   # an array in place of a static value: any numbers
        array = np.asarray(float(rng.integers(0, 5)))
    choices = [
        lambda: value,
        lambda: array.astype(F32 if array.dtype == F64 else F64),
        lambda: array.astype(">f8"),                       # equal dtype, another object
        lambda: array[..., None],                           # a rank more
        lambda: array.reshape(-1)[:1].reshape(()) if array.size else array.reshape(()),
        lambda: np.resize(array, _resized(array.shape, rng)),
        lambda: np.float64(rng.normal()),                   # a NumPy scalar: "float" too
        lambda: float(rng.normal()),
        lambda: array.tolist(),
        lambda: int(rng.integers(0, 5)),
        lambda: [True, False, None, "mean", "sum", (0, 1), (1,), 3, 4, 3.0][rng.integers(10)],
        lambda: fake_cupy.ndarray(array) if not device else array,   # the other kind
    ]
    return choices[rng.integers(len(choices))]()


def _resized(shape, rng):
    shape = list(shape) or [1]
    shape[rng.integers(len(shape))] = int(rng.integers(0, 6))
    return tuple(shape)


def outcome(call, args):
    try:
        return call(*args)
    except TypeError as exc:
        return ("error", str(exc))


@pytest.mark.parametrize("name", sorted(TABLES))
def test_guards_take_only_what_dispatch_sends_to_the_same_body(name):
    f, table = dispatcher(name)
    params, signatures, least, device = TABLES[name]
    rng = np.random.default_rng(sorted(TABLES).index(name))
    taken = slow = 0
    for trial in range(1500):
        signature = signatures[rng.integers(len(signatures))]
        sizes = {f"d{i}": int(rng.integers(least, least + 3)) for i in range(1, 4)}
        args = [plain(e, sizes, device, rng) for e in signature]
        if trial % 4:   # one call in four is exactly of a compiled signature
            for k in range(len(args)):
                if rng.random() < 0.4:
                    args[k] = mutated(args[k], signature[k], device, rng)
        want = outcome(lambda *a: _dispatch(table, a), args)
        got = outcome(f, args)
        by_guard = got[0] not in ("slow", "error")   # an error comes from _dispatch only
        taken, slow = taken + by_guard, slow + (not by_guard)
        got = got[1] if got[0] == "slow" else got
        assert by_guard or trial % 4, f"no guard took {args} ({signature})"
        if want[0] == "error" or got[0] == "error":
            assert got == want, (args, got, want)
            continue
        assert got[0] == want[0], (args, got, want)       # the same body...
        # ...given the caller's arguments (a list as the array np.asarray makes of it)
        assert all(g is a or (type(a) is list and type(g) is np.ndarray and np.array_equal(g, a))
                   for g, a in zip(got[1], args))
    assert taken > 300 and slow > 300, (taken, slow)


# ---- compiled modules -------------------------------------------------------------------------
def test_compiled_calls_take_their_guards_and_mismatches_raise_dispatchs_error(tmp_path):
    """Imported where adcompiler is not importable: each mismatch raises exactly the TypeError
    ``_dispatch`` raises; what a guard is stricter about is served by ``_dispatch``."""
    assert adcompiler("compile", write(tmp_path, "modes.py", MODES)).returncode == 0
    out = run_isolated(COUNT_SLOW + textwrap.dedent("""
        import numpy as np
        m = counting("modes_grad")
        x, y = np.linspace(0.1, 0.6, 6).reshape(3, 2), np.array([1.0, 2.0, 0.5])

        class OnDevice:   # what _signature takes for a GPU array
            __cuda_array_interface__ = {}

        mismatches = {
            "static value": (m.grad_one, m._GRAD_ONE, (x, 4)),
            "fixed size": (m.grad_one, m._GRAD_ONE, (np.ones((3, 3)), 2)),
            "least": (m.grad_one, m._GRAD_ONE, (np.ones((1, 2)), 2)),
            "int for a float": (m.value_and_grad_both, m._VALUE_AND_GRAD_BOTH, (y, 2)),
            "array for a float": (m.vjp_vector, m._VJP_VECTOR, (y, y, y)),
            "two sizes for d1": (m.value_and_grad_both, m._VALUE_AND_GRAD_BOTH, (y, y[:2])),
            "dtype": (m.value_and_grad_both, m._VALUE_AND_GRAD_BOTH, (y, y.astype("f4"))),
            "GPU data": (m.value_and_grad_both, m._VALUE_AND_GRAD_BOTH, (y, OnDevice())),
        }
        for what, (call, table, args) in mismatches.items():
            keywords = {"cotangent": args[2]} if len(args) > 2 else {}
            errors = []
            for run in (lambda: call(*args[:2], **keywords),
                        lambda: m._real_dispatch(table, args)):
                try:
                    run()
                    errors.append("no error")
                except TypeError as exc:
                    errors.append(str(exc))
            text = errors[0].splitlines()   # what was given, or the one line saying why not
            given = text[text.index("but was given") + 1] if "but was given" in text else text[0]
            print(what, "|", errors[0] == errors[1], "|", given.strip())
        slow.clear()
        plain = m.value_and_grad_both(y, 1.5)
        scalar = m.value_and_grad_both(y, np.float64(1.5))       # a NumPy scalar: "float" too
        swapped = m.value_and_grad_both(y.astype(">f8"), 1.5)    # float64, another dtype object
        for got in (scalar, swapped):
            np.testing.assert_array_equal(got[0], plain[0])
            for g, p in zip(got[1], plain[1]):
                np.testing.assert_array_equal(g, p)
        print("served by _dispatch", slow)
    """), tmp_path)
    lines = out.splitlines()
    assert lines[:8] == [
        "static value | True | (x: float64[3, 2], k: int 4)",
        "fixed size | True | (x: float64[3, 3], k: int 2)",
        "least | True | (x: float64[1, 2], k: int 2)",
        "int for a float | True | (x: float64[3], y: int 2)",
        "array for a float | True | (x: float64[3], c: float64[3], cotangent: float64[3])",
        "two sizes for d1 | True | (x: float64[3], y: float64[2])",
        "dtype | True | (x: float64[3], y: float32[3])",
        "GPU data | True | value_and_grad_both() runs on the CPU, but y is a OnDevice: pass "
        "y.get()"]
    assert lines[8] == "served by _dispatch ['value_and_grad_both', 'value_and_grad_both']"
