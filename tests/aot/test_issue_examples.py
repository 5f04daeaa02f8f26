"""Issue #30's own examples, tried as a new user would (``adcompiler compile``, then the module
imported by ``python -I`` where adcompiler cannot be imported), and the corners an audit of the
issue found uncovered.

- The shipped samples (samples/mlp.py, seed_graph.py, shapes.py, seed_f.py), their functions as
  written, compiled at realistic example sizes (a batch of 300, hidden 128, 100 steps, 10^5
  entries), give the unoptimised gradient at sizes they were not compiled with, below and above
  every threshold, and at sizes that coincide.
- The issue's MLP at a batch of 300 and 64 hidden units, called at a batch of 50 and 16 hidden
  units, gives ``adcompiler.value_and_grad``'s values.
- A size a reshape to a constant fixes is named in the header and in the call's error; a loop
  over an array's rows, or over its first three, is not a fixed size.
- Module-level values built in a loop or a comprehension: located errors saying why and what to
  write instead.
- A caller's time-out raised inside a ``custom_vjp`` rule while compiling passes through.
- Functions defined in notebook cells (source in linecache, as IPython registers it) are not
  called stale, and a cell redefining a function gets the new gradient, through the disk cache.
"""

import linecache
import textwrap

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.backends.check_modes import unoptimised
from tests.aot import test_every_size
from tests.aot.test_standalone_shapes import compare_calls
from tests.cli.test_cli import SAMPLES, adcompiler, import_path, run_isolated, write

RNG = np.random.default_rng(3030)
TRANSFORMS = {"grad": ad.grad, "value_and_grad": ad.value_and_grad, "vjp": ad.vjp}


def normal(*shape, scale=1.0):
    return RNG.standard_normal(shape) * scale


def reference(gradient, args, kw=None):
    """The unoptimised gradient (no fusion, buffers or numexpr) of a decorated function."""
    with unoptimised():
        return TRANSFORMS[gradient.mode](gradient.primal, wrt=gradient.wrt)(*args, **(kw or {}))


# the samples' example functions at realistic sizes; the samples' own functions are kept as written
REALISTIC_EXAMPLES = {
    "mlp": '''
        def example_loss():
            rng = np.random.default_rng(0)
            x = rng.standard_normal((300, 64))
            onehot = np.eye(10)[rng.integers(0, 10, size=300)]
            return (rng.standard_normal((64, 128)) * 0.1, np.zeros(128),
                    rng.standard_normal((128, 10)) * 0.1, np.zeros(10), x, onehot)
        ''',
    "seed_graph": '''
        def example_loss():
            return 2.0, 3.0, 4.0, np.random.default_rng(5).standard_normal((256, 128))
        ''',
    "shapes": '''
        def example_bias():
            rng = np.random.default_rng(0)
            return (rng.standard_normal((128, 256)), rng.standard_normal(256),
                    rng.standard_normal((300, 128)))


        def example_rows():
            rng = np.random.default_rng(1)
            return rng.standard_normal((100, 128)), rng.standard_normal(128)


        def example_standardise():
            return (np.random.default_rng(2).standard_normal((300, 128)),)


        def example_window():
            return (np.random.default_rng(3).standard_normal(100000),)


        def example_scaled():
            rng = np.random.default_rng(4)
            return rng.standard_normal((300, 128)), rng.standard_normal(128)


        def example_by_size():
            return (np.ones(500),)
        ''',
}


@pytest.fixture(scope="module")
def realistic_samples(tmp_path_factory):
    """Each sample with its example functions replaced by realistic sizes, compiled by the
    console script; samples/seed_f.py (two floats, no size) as it is."""
    directory = tmp_path_factory.mktemp("realistic_samples")
    for name, examples in REALISTIC_EXAMPLES.items():
        text = (SAMPLES / f"{name}.py").read_text()
        text = text[:text.index("def example_")] + textwrap.dedent(examples).lstrip("\n")
        (directory / f"{name}.py").write_text(text)
    (directory / "seed_f.py").write_text((SAMPLES / "seed_f.py").read_text())
    done = adcompiler("compile", directory)
    assert done.returncode == 0, done.stderr
    return directory, done.stderr


def test_samples_compiled_at_realistic_sizes_say_any_sizes(realistic_samples):
    _, said = realistic_samples
    for name in ("grad_loss", "grad_bias", "grad_rows", "grad_standardise", "grad_window",
                 "vjp_scaled"):
        assert f"{name} (1 signature, any sizes)" in said, said
    assert "value_and_grad_f (1 signature)" in said        # two floats: no size to vary
    assert said.count("per shape") == 2, said     # by_size, which decides on a size: said twice
    assert "grad_by_size (1 signature, per shape)" in said


def mlp_case(mlp, batch, inputs, hidden, classes):
    onehot = np.eye(classes)[RNG.integers(0, classes, size=batch)]
    args = (normal(inputs, hidden, scale=0.1), normal(hidden), normal(hidden, classes, scale=0.1),
            normal(classes), normal(batch, inputs), onehot)
    return ("mlp_grad", "grad_loss", args, {}, reference(mlp.loss, args))


def shapes_cases(shapes):
    cases = []
    for d, h, b in ((2, 5, 11), (16, 32, 50), (64, 200, 1000), (128, 128, 128)):  # ex. 128, 256, 300
        args = (normal(d, h), normal(h), normal(b, d))
        cases.append(("shapes_grad", "grad_bias", args, {}, reference(shapes.bias, args)))
    for rows, cols in ((3, 4), (150, 40), (2, 2), (128, 128)):                    # example 100, 128
        args = (normal(rows, cols), normal(cols))
        cases.append(("shapes_grad", "grad_rows", args, {}, reference(shapes.rows, args)))
        kw = {"cotangent": normal(rows, cols)}
        cases.append(("shapes_grad", "vjp_scaled", args, kw, reference(shapes.scaled, args, kw)))
    for shape in ((3, 5), (1000, 64), (40, 40)):                                  # example 300, 128
        x = normal(*shape)
        cases.append(("shapes_grad", "grad_standardise", (x,), {},
                      reference(shapes.standardise, (x,))))
    for n in (3, 17, 5000, 250_000):                                              # example 10^5
        x = normal(n)
        cases.append(("shapes_grad", "grad_window", (x,), {}, reference(shapes.window, (x,))))
    x = normal(500)                                                               # per shape
    cases.append(("shapes_grad", "grad_by_size", (x,), {}, reference(shapes.by_size, (x,))))
    return cases


def test_samples_compiled_at_realistic_sizes_take_other_sizes_without_adcompiler(
        realistic_samples):
    directory, _ = realistic_samples
    mlp, graph, shapes, seed = (import_path(directory / f"{s}.py") for s in
                                ("mlp", "seed_graph", "shapes", "seed_f"))
    cases = [mlp_case(mlp, *sizes) for sizes in      # example: batch 300, 64 in, 128 hidden, 10
             ((50, 64, 16, 10), (7, 5, 3, 2), (1000, 64, 256, 10), (128, 128, 128, 4))]
    for shape in ((3, 5), (1000, 300), (64, 64)):    # example: 256 x 128
        args = (2.0, -3.0, 0.5, normal(*shape))
        cases.append(("seed_graph_grad", "grad_loss", args, {}, reference(graph.loss, args)))
    cases += shapes_cases(shapes)
    for args in ((3.0, -1.5), (0.25, 7.0)):          # example: 2.0, 5.0
        cases.append(("seed_f_grad", "value_and_grad_f", args, {}, reference(seed.f, args)))
    compare_calls(directory, cases)   # to 1e-12; every call took its guard, none _dispatch


ISSUE_MLP = '''
    import numpy as np
    import adcompiler as ad


    @ad.value_and_grad(wrt=("W1", "b1", "W2", "b2"))
    def loss(W1, b1, W2, b2, x, y):
        h = np.tanh(x @ W1 + b1)
        out = h @ W2 + b2
        return np.mean((out - y) ** 2)


    def example_loss():
        rng = np.random.default_rng(0)
        x = rng.standard_normal((300, 2))
        y = rng.standard_normal((300, 1))
        return (rng.standard_normal((2, 64)) * 0.5, np.zeros(64),
                rng.standard_normal((64, 1)) * 0.5, np.zeros(1), x, y)
'''


def test_the_issues_mlp_compiled_at_batch_300_takes_batch_50_and_16_hidden(tmp_path):
    """The issue's report: compiled at a batch of 300 and 64 hidden units it was per shape and
    refused a batch of 50; the module now gives ``ad.value_and_grad``'s values there."""
    path = write(tmp_path, "net.py", ISSUE_MLP)
    done = adcompiler("compile", path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == f"wrote {tmp_path / 'net_grad.py'}: value_and_grad_loss " \
                                  "(1 signature, any sizes)"
    user = import_path(path)
    cases = []
    for batch, hidden in ((50, 16), (8, 3), (300, 64), (1000, 128), (64, 64)):
        args = (normal(2, hidden, scale=0.5), normal(hidden), normal(hidden, 1, scale=0.5),
                normal(1), normal(batch, 2), normal(batch, 1))
        decorated = user.loss(*args)          # the decorator's own (optimised) code
        value, grads = ad.value_and_grad(user.loss.primal, wrt=user.loss.wrt)(*args)
        assert decorated[0] == pytest.approx(value, rel=1e-13)
        for g, e in zip(decorated[1], grads):
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)
        cases.append(("value_and_grad_loss", args, (value, grads)))
    test_every_size.compare_calls(tmp_path, cases, module="net_grad")   # python -I, to 1e-12


FIXED = '''
    import numpy as np
    import adcompiler as ad


    @ad.grad
    def reshaped(x):
        return np.sum(np.tanh(x.reshape(6, 2)) ** 2)


    def example_reshaped():
        return (np.full((3, 4), 0.1),)


    @ad.grad
    def over_rows(x):
        total = 0.0
        for row in x:
            total = total + np.sum(np.sin(row) * row)
        return total


    def example_over_rows():
        return (np.full((100, 128), 0.1),)


    @ad.grad
    def unrolled(x):
        return sum(np.sum(np.sin(x[i]) * (i + 1.0)) for i in range(x.shape[0]))


    def example_unrolled():
        return (np.full((6, 4), 0.1),)


    @ad.grad
    def first_three(x):
        total = 0.0
        for i in range(3):
            total = total + np.sum(x[i] ** 2) * (i + 1.0)
        return total * x.shape[0]


    def example_first_three():
        return (np.full((100, 128), 0.1),)
'''


def test_a_reshape_to_a_constant_is_named_and_loops_over_rows_are_not(tmp_path):
    path = write(tmp_path, "fixed.py", FIXED)
    done = adcompiler("compile", path)
    assert done.returncode == 0, done.stderr
    assert "grad_reshaped (1 signature, per shape)" in done.stderr
    assert "grad_over_rows (1 signature, any sizes)" in done.stderr
    assert "grad_first_three (1 signature, any sizes)" in done.stderr
    note = f"  note: grad_reshaped is compiled per shape: compiling it for other sizes fails: " \
           f"{path}:7:27: error: ValueError: cannot reshape array of size"
    assert note in done.stderr, done.stderr
    # a size a comprehension is unrolled over stays the example's: said on the terminal too
    assert "grad_unrolled (1 signature, any sizes)" in done.stderr
    assert "  note: grad_unrolled keeps a size: x.shape[0] stays 6: the code compiled for other " \
           "sizes differs in more than its numbers (its length changes with the sizes: a loop " \
           "or a comprehension over a size is unrolled)\n" in done.stderr, done.stderr
    text = (tmp_path / "fixed_grad.py").read_text()
    header = " ".join(text[:text.index('"""', 3)].split())
    assert "Compiled per shape (the code compiled for other sizes could not be merged): - " \
           "grad_reshaped: compiling it for other sizes fails:" in header
    assert "into shape (6,2)" in header
    assert "# d1, d2: any sizes of at least 2" in text      # over_rows: for row in x
    assert "- grad_unrolled: x.shape[0] stays 6: the code compiled for other sizes differs" \
        in header
    out = run_isolated("""
        import numpy as np, fixed_grad as m
        for call in (m.grad_reshaped, m.grad_unrolled):
            try:
                call(np.ones((4, 3)))
            except TypeError as exc:
                print(str(exc).splitlines()[0])
    """, tmp_path)
    assert out.splitlines() == [
        "grad_reshaped(): inconsistent sizes: x.shape[0] is 4, but the code is compiled for 3 "
        "only (the module's header says why); x.shape[1] is 3, but the code is compiled for 4 "
        "only (the module's header says why)",
        "grad_unrolled(): inconsistent sizes: x.shape[0] is 4, but the code is compiled for 6 "
        "only (the module's header says why)"]
    user = import_path(path)
    x = normal(6, 9)                                      # any number of columns
    cases = [("fixed_grad", "grad_unrolled", (x,), {}, reference(user.unrolled, (x,)))]
    for shape in ((3, 2), (7, 5), (250, 64), (100, 128)):
        x = normal(*shape)
        for name in ("over_rows", "first_three"):
            cases.append(("fixed_grad", f"grad_{name}", (x,), {},
                          reference(getattr(user, name), (x,))))
    compare_calls(tmp_path, cases)


MODULE_VALUES = {
    "loop_bound": ('''
        import numpy as np
        import adcompiler as ad

        for k in range(3):
            W = np.ones(3) * k


        @ad.grad
        def f(x):
            return np.sum(x * W)


        def example_f():
            return (np.ones(3),)
        ''', "10:23", "`W` is computed when {name}.py runs (line 4: `for k in range(3):`), and "
         "compiling reads the file without running it: its value is not known here",
        "    return np.sum(x * W)", 22, 1,
        "hint: pass `W` to the function as a parameter (and return its value from the example "
        "function), or write its value literally at line 4"),
    "comprehension": ('''
        import numpy as np
        import adcompiler as ad

        SCALES = [0.5 * k for k in range(3)]


        @ad.grad
        def f(x):
            return np.sum(x * SCALES[1])


        def example_f():
            return (np.ones(3),)
        ''', "9:23", "`SCALES` is computed when {name}.py runs (line 4: `SCALES = [0.5 * k for k "
         "in range(3)]`), and compiling reads the file without running it: its value is not "
         "known here", "    return np.sum(x * SCALES[1])", 22, 6,
        "hint: pass `SCALES` to the function as a parameter (and return its value from the "
        "example function), or write its value literally at line 4"),
    "appended": ('''
        import numpy as np
        import adcompiler as ad

        SCALES = []
        for k in range(3):
            SCALES.append(0.5 * k)


        @ad.grad
        def f(x):
            return np.sum(x * SCALES[1])


        def example_f():
            return (np.ones(3),)
        ''', "6:5", "f reads `SCALES`, a module-level list defined at line 4, and this top-level "
         "statement may change it in place after that: adcompiler reads {name}.py without "
         "running it, so f would be compiled with the values of that definition",
        "    SCALES.append(0.5 * k)", 4, 22,
        "hint: write the final values in its definition (a literal), pass it to f as a "
        "parameter, or compute it inside the function"),
}


@pytest.mark.parametrize("name", sorted(MODULE_VALUES))
def test_a_module_level_value_built_in_a_loop_says_why_and_what_to_write(tmp_path, name):
    text, where, message, line, col, width, hint = MODULE_VALUES[name]
    path = write(tmp_path, f"{name}.py", text)
    done = adcompiler("compile", path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == f"{path}:{where}: error: " + message.format(name=name)
    assert lines[1:3] == [line, " " * col + "^" * width]
    assert lines[3].startswith(hint), lines[3]
    assert not (tmp_path / f"{name}_grad.py").exists()


def custom_loss(fwd_raises):
    @ad.custom_vjp
    def sine(x):
        return np.sin(x)

    def sine_fwd(x):
        raise fwd_raises

    def sine_bwd(res, g):
        return (g,)

    sine.defvjp(sine_fwd, sine_bwd)

    def loss(x):
        return np.sum(sine(x))
    return loss


class CallerTimedOut(Exception):
    """What a caller's alarm handler might raise: an Exception, but no mistake of the rule."""


@pytest.mark.parametrize("exception", [TimeoutError("caller's deadline"), CallerTimedOut("alarm"),
                                       KeyboardInterrupt()])
def test_an_interruption_inside_a_custom_rule_passes_through(exception):
    with pytest.raises(type(exception)) as info:
        ad.grad(custom_loss(exception))(np.ones(3))
    assert info.value is exception


@pytest.mark.parametrize("mistake", [ValueError("shapes differ"), NameError("name 'y' is not "
                                                                             "defined")])
def test_a_custom_rules_own_mistake_is_still_located(mistake):
    with pytest.raises(ad.CompileError) as info:
        ad.grad(custom_loss(mistake))(np.ones(3))
    assert f"the fwd rule of custom_vjp `sine`, raised {type(mistake).__name__}: " in \
        str(info.value)
    assert info.value.filename == __file__


def run_cell(number, source, namespace):
    """Run ``source`` as IPython runs a cell: compiled under a file name of its own, its lines
    registered in linecache (no file on disk)."""
    filename = f"<ipython-input-{number}-30>"
    lines = textwrap.dedent(source).lstrip("\n").splitlines(keepends=True)
    linecache.cache[filename] = (len("".join(lines)), None, lines, filename)
    exec(compile("".join(lines), filename, "exec"), namespace)


def test_functions_defined_in_notebook_cells_are_not_called_stale(tmp_path, monkeypatch):
    monkeypatch.setenv("ADCOMPILER_CACHE_DIR", str(tmp_path / "cache"))
    namespace = {"np": np}
    x = np.array([0.5, -1.0, 2.0])
    run_cell(1, """
        def loss(x):
            return np.sum(np.sin(x) * x)
        """, namespace)
    first = namespace["loss"]
    np.testing.assert_allclose(ad.grad(first)(x), np.cos(x) * x + np.sin(x), rtol=1e-14)
    run_cell(2, """
        def loss(x):
            return np.sum(x ** 3)
        """, namespace)                             # the cell edited and run again
    np.testing.assert_allclose(ad.grad(namespace["loss"])(x), 3 * x ** 2, rtol=1e-14)
    np.testing.assert_allclose(ad.grad(first)(x), np.cos(x) * x + np.sin(x), rtol=1e-14)
    assert len(list((tmp_path / "cache").glob("*.npz"))) == 2   # one entry per cell's code


def test_every_command_takes_a_2000_term_expression_without_a_traceback(tmp_path):
    """compile and show are tested in tests/frontend/test_deep_expressions.py; graph lowered the
    function without room to recurse and printed a RecursionError's traceback (exit 1)."""
    body = " + ".join(f"{i}.0 * x" for i in range(2000))
    path = write(tmp_path, "deep_sum.py", "import numpy as np\n\nimport adcompiler as ad\n\n\n"
                 f"@ad.grad\ndef loss(x):\n    return np.sum({body})\n\n\n"
                 "def example_loss():\n    return (np.ones(3),)\n")
    drawn = adcompiler("graph", f"{path}:loss", "-o", tmp_path / "loss.dot")
    assert drawn.returncode == 0 and "Traceback" not in drawn.stderr, drawn.stderr
    dot = (tmp_path / "loss.dot").read_text()
    assert dot.startswith("digraph") and dot.count("->") > 2 * 2000
    checked = adcompiler("check", path)
    assert checked.returncode == 0 and "Traceback" not in checked.stderr, checked.stderr
    assert "all gradients agree with finite differences" in checked.stdout
