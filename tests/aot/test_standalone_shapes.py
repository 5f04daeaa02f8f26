"""Standalone gradients hold for every size of their example's pattern (dtypes, ranks, sizes of 1).

The console script compiles each function for one example shape; the module it writes, imported
where adcompiler cannot be imported, must give ``adcompiler.grad``'s values (to 1e-12) at other
sizes, and raise a TypeError for another rank or broadcasting pattern. The merge that makes a
body shape-polymorphic is checked by construction (specialised back, it reproduces each code
compiled for one size) and refuses what it cannot write as a formula of the sizes.
"""

import json
import shutil
import textwrap

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.aot import antiunify
from adcompiler.frontend.reading.module import load_module
from adcompiler.aot.sizedeps import least_size, size_decision
from tests.cli.test_cli import COUNT_SLOW, SAMPLES, adcompiler, import_path, run_isolated, write

RNG = np.random.default_rng(7)


def normal(*shape):
    return RNG.standard_normal(shape)


def compare_calls(directory, cases):
    """Run every ``(module, call, args, keywords, expected)`` in one isolated process: each
    call must take its guard (never ``_dispatch``) and give ``expected``."""
    values = {f"{i}_{j}": a for i, (_, _, args, kw, _) in enumerate(cases)
              for j, a in enumerate(list(args) + list(kw.values()))}
    np.savez(directory / "cases.npz", **values)
    kinds = {k: type(v).__name__ if isinstance(v, (float, int)) else "array"
             for k, v in values.items()}
    spec = [(m, call, len(args), list(kw)) for m, call, args, kw, _ in cases]
    got, slow = json.loads(run_isolated(COUNT_SLOW + textwrap.dedent(f"""
        import json, numpy as np
        data = np.load("cases.npz")
        convert = {{"float": float, "int": int, "array": lambda a: a}}
        out = []
        for i, (module, call, n, keywords) in enumerate({spec!r}):
            keys = [f"{{i}}_{{j}}" for j in range(n + len(keywords))]
            values = [convert[{kinds!r}[k]](data[k]) for k in keys]
            fn = getattr(counting(module), call)
            result = fn(*values[:n], **dict(zip(keywords, values[n:])))
            flat = list(result) if isinstance(result, tuple) else [result]
            out.append([np.asarray(r).tolist() for r in flat])
        print(json.dumps([out, slow]))
    """), directory))
    assert slow == [], f"no guard took these calls: {slow}"
    for (module, call, args, _, expected), values in zip(cases, got):
        expected = list(expected) if isinstance(expected, tuple) else [expected]
        assert len(values) == len(expected), call
        for g, e in zip(values, expected):
            np.testing.assert_allclose(np.asarray(g), e, rtol=1e-12, atol=1e-14,
                                       err_msg=f"{module}.{call} at {[np.shape(a) for a in args]}")


def mlp_args(batch, inputs, hidden, classes):
    onehot = np.eye(classes)[RNG.integers(0, classes, size=batch)]
    return (normal(inputs, hidden) * 0.3, normal(hidden), normal(hidden, classes) * 0.3,
            normal(classes), normal(batch, inputs), onehot)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """The samples, compiled by the console script for their one example shape each."""
    directory = tmp_path_factory.mktemp("samples")
    for sample in ("mlp", "seed_graph", "shapes"):
        shutil.copy(SAMPLES / f"{sample}.py", directory)
    done = adcompiler("compile", directory)
    assert done.returncode == 0, done.stderr
    return directory, done.stderr


def test_sample_gradients_hold_for_other_sizes_without_adcompiler(compiled):
    directory, _ = compiled
    mlp, graph, shapes = (import_path(directory / f"{s}.py") for s in
                          ("mlp", "seed_graph", "shapes"))
    cases = []
    for sizes in ((3, 5, 7, 2), (20, 16, 32, 4), (4, 4, 4, 4)):   # example: (8, 16, 32, 4)
        args = mlp_args(*sizes)
        cases.append(("mlp_grad", "grad_loss", args, {}, mlp.loss(*args)))
    for shape in ((3, 5), (7, 2)):                                  # example: (2, 2)
        args = (2.0, 3.0, 4.0, normal(*shape))
        cases.append(("seed_graph_grad", "grad_loss", args, {}, graph.loss(*args)))
    for d, h, b in ((2, 5, 11), (7, 7, 7), (3, 2, 300)):            # example: (4, 3, 8)
        args = (normal(d, h), normal(h), normal(b, d))
        cases.append(("shapes_grad", "grad_bias", args, {}, shapes.bias(*args)))
    for rows, cols in ((2, 2), (9, 5)):                              # examples: (4, 3), (3, 5)
        args = (normal(rows, cols), normal(cols))
        cases.append(("shapes_grad", "grad_rows", args, {}, shapes.rows(*args)))
        cases.append(("shapes_grad", "grad_standardise", args[:1], {},
                      shapes.standardise(args[0])))
        kw = {"cotangent": normal(rows, cols)}
        cases.append(("shapes_grad", "vjp_scaled", args, kw, shapes.scaled(*args, **kw)))
    for n in (3, 17):                                                 # example: 6
        x = normal(n)
        cases.append(("shapes_grad", "grad_window", (x,), {}, shapes.window(x)))
    x = normal(5)                                                     # per shape: (5,) only
    cases.append(("shapes_grad", "grad_by_size", (x,), {}, shapes.by_size(x)))
    compare_calls(directory, cases)   # each call took its guard, none went to _dispatch


def test_other_ranks_and_broadcasting_patterns_raise_type_errors(compiled):
    directory, _ = compiled
    out = run_isolated("""
        import numpy as np, shapes_grad as m
        calls = [
            lambda: m.grad_bias(np.ones((4, 3)), np.ones((1, 3)), np.ones((8, 4))),  # rank
            lambda: m.grad_bias(np.ones((4, 3)), np.ones(3), np.ones((1, 4))),       # size 1
            lambda: m.grad_bias(np.ones((4, 3)), np.ones(3), np.ones((8, 5))),       # d1 twice
            lambda: m.grad_bias(np.ones((4, 3), np.float32), np.ones(3), np.ones((8, 4))),
            lambda: m.grad_window(np.ones(2)),                                        # x[:3]
            lambda: m.grad_by_size(np.ones(3)),                                       # per shape
        ]
        for call in calls:
            try:
                call()
                print("no error")
            except TypeError as exc:
                lines = str(exc).splitlines()
                at = next(i for i, t in enumerate(lines) if "was compiled for" in t)
                print(lines[at + 1])
                print(lines[0] if at else "-")
    """, directory).splitlines()
    assert out[::2] == [
        "  (W: float64[d1, d2], b: float64[d2], x: float64[d3, d1])"] * 4 + [
        "  (x: float64[d1])", "  (x: float64[5])"]
    # sizes the pattern ties, given apart: named first, as NumPy names shapes it cannot broadcast
    assert out[1::2] == ["-", "-", "grad_bias(): inconsistent sizes: x.shape[1] is 5 but "
                         "W.shape[0] is 4, and the function needs them equal (both are d1)",
                         "-", "-", "grad_by_size(): inconsistent sizes: len(x) is 3, but the "
                         "code is compiled for 5 only (the module's header says why)"]
    text = run_isolated("""
        import numpy as np, shapes_grad as m
        try:
            m.grad_window(np.ones(2))
        except TypeError as exc:
            print(exc)
    """, directory)
    assert "(a named size is any size of at least 3; the same name, the same size)" in text
    assert "  (x: float64[2])" in text


def test_the_module_says_which_gradients_hold_for_any_size_and_why_not(compiled):
    directory, stderr = compiled
    assert "grad_loss (1 signature, any sizes)" in stderr
    assert "grad_by_size (1 signature, per shape)" in stderr
    assert "  note: grad_by_size is compiled per shape: `if x.shape[0] > 3:` (line 54) decides " \
           "on a size while compiling" in stderr
    text = (directory / "shapes_grad.py").read_text()
    header = text[:text.index('"""', 3)]
    assert "- grad_by_size: `if x.shape[0] > 3:` (line 54) decides on a size while compiling" \
        in " ".join(header.split())
    assert "# grad of bias for (W: float64[d1, d2], b: float64[d2], x: float64[d3, d1])\n" \
           "# d1, d2, d3: any sizes of at least 2\n" \
           "def _grad_bias_1(W, b, x):\n    d2 = W.shape[1]\n    d3 = x.shape[0]\n" in text
    assert "def _grad_rows_1(x, w):\n    d1, d2 = x.shape\n" in text
    assert "for i in range(d1):" in text and "# grad of by_size for (x: float64[5])" in text
    # the guards: types and dtypes by identity, each shape read once, then the sizes
    assert "\n_FLOAT64 = np.dtype('float64')\n" in text
    assert "\n".join([
        "    # (W: float64[d1, d2], b: float64[d2], x: float64[d3, d1])",
        "    if (type(W) is np.ndarray and W.dtype is _FLOAT64 and W.ndim == 2",
        "            and type(b) is np.ndarray and b.dtype is _FLOAT64 and b.ndim == 1",
        "            and type(x) is np.ndarray and x.dtype is _FLOAT64 and x.ndim == 2):",
        "        d1, d2 = W.shape",
        "        d3, x_1 = x.shape",
        "        if d1 >= 2 and d2 >= 2 and len(b) == d2 and d3 >= 2 and x_1 == d1:",
        "            return _grad_bias_1(W, b, x)",
        "    return _dispatch(_GRAD_BIAS, (W, b, x))"]) in text
    assert "    if type(x) is np.ndarray and x.dtype is _FLOAT64 and x.shape == (5,):\n" \
           "        return _grad_by_size_1(x)\n" in text


PLANNED = '''
    import numpy as np
    import adcompiler as ad


    @ad.grad
    def f(x, k=1):
        h = np.tanh(x * 2.0 + 1.0)
        return np.sum(np.exp(h) * h + h * h * k)


    def example_f():
        return [(np.full((300, 200), 0.01),), (np.full((200, 300), 0.01), 2)]
'''


def test_planned_work_arrays_are_kept_per_body_and_per_size(tmp_path):
    """Large arrays go into reused buffers; each body has its own pools, one per set of sizes."""
    path = write(tmp_path, "planned.py", PLANNED)
    done = adcompiler("compile", path)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "planned_grad.py").read_text()
    assert "np.empty((d1, d2), dtype=np.float64)" in text and "_sized.pop()" in text
    user = import_path(path)
    cases = []
    for shape, k in (((300, 200), 1), ((200, 300), 2), ((310, 200), 1), ((300, 200), 1),
                     ((5, 7), 2), ((200, 300), 2)):
        x = RNG.uniform(-1, 1, shape)
        cases.append(("planned_grad", "grad_f", (x, k), {}, user.f(x, k)))
    compare_calls(tmp_path, cases)


# ---- the merge: by construction --------------------------------------------------------------
def test_merged_code_reproduces_every_code_it_was_merged_from():
    @ad.grad(wrt=("W", "b"))
    def bias(W, b, x):
        return np.mean((np.tanh(x @ W + b) - 0.5) ** 2) + np.sum(x[1:] - x[:-1])

    sizes = [{"d1": 4, "d2": 3, "d3": 8}, {"d1": 11, "d2": 13, "d3": 17},
             {"d1": 19, "d2": 13, "d3": 17}, {"d1": 11, "d2": 23, "d3": 17},
             {"d1": 11, "d2": 13, "d3": 29}]
    sources = [bias.specialize(np.ones((s["d1"], s["d2"])), np.ones(s["d2"]),
                               np.ones((s["d3"], s["d1"]))).source for s in sizes]
    template = antiunify.merge(sources, sizes, 1, {"d1": 2, "d2": 3, "d3": 4})
    assert isinstance(template, antiunify.Template), template
    for source, size in zip(sources, sizes):
        assert template.instantiate(size) == source
    assert "(2 / (d2 * d3))" in template.render()
    moves = {"d1": 2, "d2": 3, "d3": 4}
    constant = sources[:1] + [sources[1].replace("- 0.5", "- 0.25")] + sources[2:]
    assert antiunify.merge(constant, sizes, 1, moves).startswith("the number 0.5 in `t2 = ")
    renamed = sources[:2] + [sources[2].replace("np.tanh", "np.sin")] + sources[3:]
    assert "differs in more than its numbers" in antiunify.merge(renamed, sizes, 1, moves)


@pytest.mark.parametrize("formula, expected", [
    (lambda d1, d2: d1, "d1"),                                # a size
    (lambda d1, d2: d1 - 1, "d1 - 1"),                        # range(x.shape[0] - 1)
    (lambda d1, d2: d1 + d2, "d1 + d2"),                      # np.concatenate's offsets
    (lambda d1, d2: d1 * d2, "d1 * d2"),
    (lambda d1, d2: 1 / d1, "1 / d1"),                        # a mean's scale
    (lambda d1, d2: 2 / (d1 * d2), "2 / (d1 * d2)"),
    (lambda d1, d2: 3 * (1 / d1), "3 * (1 / d1)"),            # 0.30000000000000004 at 10
    (lambda d1, d2: 3 / d1, "3 / d1"),                        # 0.3 at 10
    (lambda d1, d2: float(d1), "float(d1)"),
])
def test_numbers_become_formulas_of_the_sizes(formula, expected):
    sizes = [{"d1": 10, "d2": 4}, {"d1": 11, "d2": 13}, {"d1": 17, "d2": 13},
             {"d1": 11, "d2": 19}]   # the example, a base, then d1 moved, then d2 moved
    values = [formula(**s) for s in sizes]
    fit = antiunify.fit_number(values, sizes, 1, {"d1": 2, "d2": 3})
    assert fit is not None and fit.expr == expected
    assert [fit.literal(s) for s in sizes] == [repr(v) for v in values]


def test_numbers_that_are_no_formula_of_the_sizes_are_refused():
    sizes = [{"d1": 8}, {"d1": 11}, {"d1": 13}]
    assert antiunify.fit_number([4, 6, 7], sizes, 1, {"d1": 2}) is None      # ceil(d1 / 2)
    assert antiunify.fit_number([5, 5, 6], sizes, 1, {"d1": 2}) is None      # not monotone


# ---- decisions on sizes, slices, and fixed sizes ------------------------------------------------
DECISIONS = '''
    import numpy as np

    def by_if(x):
        n = x.shape[0]
        if n > 3:
            return x.sum()
        return (x * 2.0).sum()

    def by_min(x):
        return x[:min(len(x), 4)].sum()

    def helper(v, n):
        return v * 2.0 if n % 2 else v

    def by_helper(x):
        return helper(x, x.shape[0]).sum()

    def fine(x, w):
        s = 0.0
        for i in range(x.shape[0] - 1):
            s = s + np.sum(x[i] * w / len(x))
        y = np.where(x > 0.0, x, 0.0 * x)
        if len(x.shape) == 2:  # the rank is part of the signature: no decision on a size
            y = y * 2.0
        return s + (y * x.shape[1]).sum() + x[:5].sum() + x[-7:].sum()
'''


def test_decisions_on_sizes_are_found_in_the_function_and_its_helpers(tmp_path):
    module = load_module(str(write(tmp_path, "decisions.py", DECISIONS)))
    found = {name: size_decision(module, name) for name in ("by_if", "by_min", "by_helper",
                                                            "fine")}
    assert (found["by_if"][0].lineno, found["by_if"][1]) == (5, "by_if")      # if n > 3
    assert (found["by_min"][0].lineno, found["by_min"][1]) == (10, "by_min")  # min(len(x), 4)
    assert (found["by_helper"][0].lineno, found["by_helper"][1]) == (13, "helper")  # n % 2
    assert found["fine"] is None
    assert least_size(module, "fine") == 7 and least_size(module, "by_if") == 2


def test_a_size_a_constant_fixes_stays_fixed_and_the_others_vary(tmp_path):
    path = write(tmp_path, "fixed.py", '''
        import numpy as np
        import adcompiler as ad

        W = np.array([[1.0, -2.0, 0.5], [0.5, 3.0, 1.0]])


        @ad.grad
        def f(x):
            return np.sum(np.tanh(x @ W) ** 2) / x.shape[0]


        def example_f():
            return (np.ones((4, 2)) * 0.1,)
        ''')
    done = adcompiler("compile", path)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "fixed_grad.py").read_text()
    assert "(('array', 'float64', ('d1', 2)),): _grad_f_1" in text
    user = import_path(path)
    x = normal(9, 2)
    compare_calls(tmp_path, [("fixed_grad", "grad_f", (x,), {}, user.f(x))])
    out = run_isolated("""
        import numpy as np, fixed_grad as m
        try:
            m.grad_f(np.ones((4, 3)))
        except TypeError as exc:
            print(str(exc).splitlines()[0])
            print(str(exc).splitlines()[2])
    """, tmp_path)
    assert out.splitlines() == [
        "grad_f(): inconsistent sizes: x.shape[1] is 3, but the code is compiled for 2 only "
        "(the module's header says why)", "  (x: float64[d1, 2])"]
    # the header says which size stays the example's, and why; so does the body's comment
    header = text[:text.index('"""', 3)]
    assert "Sizes that stay the example's" in header
    assert "- grad_f: x.shape[1] stays 2: its sizes are tied, to each other or to a number in " \
        "the code" in header
    assert "# fixed: x.shape[1] stays 2: its sizes are tied" in text


def test_equal_example_sizes_are_untied_unless_the_code_needs_them_equal(tmp_path):
    path = write(tmp_path, "square.py", '''
        import numpy as np
        import adcompiler as ad


        @ad.grad
        def elementwise(x):
            return np.sum(np.sin(x) * x)


        @ad.grad
        def matrix(a):
            return np.sum(np.tanh(a @ a))


        def example_elementwise():
            return (np.ones((4, 4)),)


        def example_matrix():
            return (np.ones((4, 4)) * 0.1,)
        ''')
    assert adcompiler("compile", path).returncode == 0
    text = (tmp_path / "square_grad.py").read_text()
    assert "(('array', 'float64', ('d1', 'd2')),): _grad_elementwise_1" in text
    assert "(('array', 'float64', ('d1', 'd1')),): _grad_matrix_1" in text
    user = import_path(path)
    x, a = normal(3, 6), normal(5, 5) * 0.3
    compare_calls(tmp_path, [("square_grad", "grad_elementwise", (x,), {}, user.elementwise(x)),
                             ("square_grad", "grad_matrix", (a,), {}, user.matrix(a))])


def test_example_arguments_of_python_floats_and_static_values_are_unchanged(tmp_path):
    path = write(tmp_path, "scalars.py", '''
        import math
        import adcompiler as ad


        @ad.grad(wrt=("a", "b"))
        def f(a, b, n=3):
            return math.sin(a) * b ** n


        def example_f():
            return 0.5, 2.0
        ''')
    assert adcompiler("compile", path).returncode == 0
    text = (tmp_path / "scalars_grad.py").read_text()
    assert "(('float',),\n     ('float',),\n     ('static', 'int', 3)): _grad_f_1" in text
    assert "'d1'" not in text and text.count("def _grad_f_") == 1


def test_cupy_modules_hold_for_other_sizes_too(tmp_path, monkeypatch):
    """Run on the NumPy-backed stand-in for CuPy (tests/fake_cupy.py): no GPU needed."""
    from adcompiler import cli
    from tests import fake_cupy
    shutil.copy(SAMPLES / "shapes.py", tmp_path)
    assert cli.main(["compile", str(tmp_path / "shapes.py"), "--backend", "cupy", "-o",
                     str(tmp_path / "shapes_gpu.py")]) == 0
    monkeypatch.syspath_prepend(str(tmp_path))
    user = import_path(tmp_path / "shapes.py")
    with fake_cupy.install() as cp:
        module = import_path(tmp_path / "shapes_gpu.py")
        slow, dispatch = [], module._dispatch
        module._dispatch = lambda table, args: slow.append(table.name) or dispatch(table, args)
        for d, h, b in ((2, 5, 11), (7, 7, 7)):
            args = (normal(d, h), normal(h), normal(b, d))
            got = module.grad_bias(*(cp.asarray(a) for a in args))
            for g, e in zip(got, user.bias(*args)):
                np.testing.assert_allclose(g.get(), e, rtol=1e-12, atol=1e-14)
        x = normal(9)
        np.testing.assert_allclose(module.grad_window(cp.asarray(x)).get(), user.window(x),
                                   rtol=1e-12, atol=1e-14)
        assert slow == []   # every call took its guard
        with pytest.raises(TypeError, match=r"x: float64\[d3, d1\]"):
            module.grad_bias(*(cp.asarray(np.ones(s)) for s in ((4, 3), (3,), (1, 4))))
        with pytest.raises(TypeError, match=r"runs on the GPU, but b is a ndarray: pass "
                                            r"cupy.asarray\(b\)"):
            module.grad_bias(cp.asarray(np.ones((4, 3))), np.ones(3), cp.asarray(np.ones((8, 4))))
        assert slow == ["grad_bias", "grad_bias"]


def test_cupy_modules_fuse_at_every_size_with_literals_as_kernel_arguments(tmp_path, monkeypatch):
    """A softmax cross-entropy fuses at large sizes and not at the example's 256 x 10 (under
    the fusion threshold): CuPy modules were compiled per shape. Ahead of time every size now
    counts as large, and a kernel's numbers (the mean's 1/n) are its call's last arguments, so
    one body serves every size; run on the NumPy-backed stand-in for CuPy, which reads the C."""
    from adcompiler import cli
    from tests import fake_cupy
    write(tmp_path, "ce.py", '''
        import numpy as np
        import adcompiler as ad


        @ad.grad(wrt=("W",))
        def ce(W, x, onehot, scale=3.0):
            z = x @ W * scale
            z = z - np.max(z, axis=1, keepdims=True)
            lse = np.log(np.sum(np.exp(z), axis=1, keepdims=True))
            return -np.mean(np.sum(onehot * (z - lse), axis=1))


        def example_ce():
            rng = np.random.default_rng(0)
            return (rng.normal(size=(100, 10)), rng.normal(size=(256, 100)),
                    np.eye(10)[rng.integers(0, 10, 256)])
        ''')
    assert cli.main(["compile", str(tmp_path / "ce.py"), "--backend", "cupy", "-o",
                     str(tmp_path / "ce_gpu.py")]) == 0
    text = (tmp_path / "ce_gpu.py").read_text()
    assert "per shape" not in text and "ElementwiseKernel" in text
    monkeypatch.syspath_prepend(str(tmp_path))
    user = import_path(tmp_path / "ce.py")
    with fake_cupy.install() as cp:
        module = import_path(tmp_path / "ce_gpu.py")
        slow, dispatch = [], module._dispatch
        module._dispatch = lambda table, args: slow.append(table.name) or dispatch(table, args)
        rng = np.random.default_rng(1)
        for d, c, n in ((100, 10, 256), (7, 3, 5), (30, 12, 4097), (2, 2, 2)):
            args = (rng.normal(size=(d, c)), rng.normal(size=(n, d)),
                    np.eye(c)[rng.integers(0, c, n)])
            (got,), (want,) = module.grad_ce(*(cp.asarray(a) for a in args)), user.ce(*args)
            np.testing.assert_allclose(got.get(), want, rtol=1e-12, atol=1e-14)
        assert slow == []


def test_lifted_literals_compute_what_the_inline_literals_did():
    """Every literal but 0, 1 and -1 becomes a parameter with the literal's own dtype (float32
    stays float32, comparisons stay weak-scalar ones), and the kernel's value is unchanged."""
    from adcompiler.backends.cuda_kernels import c_code, evaluate, lift_literals, lower_block
    from tests.cupy_helpers import one_node_block
    x = np.linspace(-3, 3, 11).astype(np.float32)
    for prim, inputs, dtype in (("multiply", (x, 0.1), "float32"), ("greater", (x, 2.5), "bool"),
                                ("power", (x, 3.0), "float32"), ("add", (x, 1.0), "float32"),
                                ("subtract", (x.astype(float), -0.25), "float64")):
        root = lower_block(one_node_block(prim, inputs, dtype))
        lifted_root, lifted = lift_literals(root, 1)
        want = evaluate(root, [x if prim != "subtract" else x.astype(float)])
        got = evaluate(lifted_root, [inputs[0]] + [v for _, v in lifted])
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype
        assert [d for d, _ in lifted] == ([] if prim == "add" else [dtype if dtype != "bool"
                                                                      else "float32"])
        assert ("x1" in c_code(lifted_root)) == bool(lifted)
