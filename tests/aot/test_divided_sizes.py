"""A size the function divides by a constant (``dh = D // H``) gets one module for every size.

The transformer block of the benchmarks (``benchmarks/workloads.py``) splits its model width D
into H = 4 heads of ``D // H``; it compiled per shape (``//`` on a size is a decision). Now the
division is exact for the multiples of H (:mod:`adcompiler.aot.divisions`): the samples merged
are multiples of 4, the body reads ``d1 // 4`` (and ``(d1 // 4) ** -0.5`` for ``dh ** -0.5``),
the module's header and body comment say d1 must be a multiple of 4 and why, and its guards and
``_dispatch`` check it. Compiled at realistic sizes (100 or 128 steps, width 128), imported where
adcompiler cannot be, the module gives the unoptimised gradient at other sizes and widths.
"""

import inspect

import numpy as np

from adcompiler.aot import antiunify
from benchmarks import workloads
from tests.aot.test_every_size import compare_calls, normal, reference
from tests.cli.test_cli import adcompiler, import_path, run_isolated, write

HEADER = '''
    import math

    import numpy as np

    import adcompiler as ad


    @ad.grad(wrt=("Wq", "Wk", "Wv", "Wo", "W1", "b1", "W2", "b2"))
'''

EXAMPLE = '''

    def example_transformer():
        rng = np.random.default_rng(0)
        S, D, F = {S}, {D}, {F}
        square = [rng.standard_normal((D, D)) / math.sqrt(D) for _ in range(4)]
        return (*square, rng.standard_normal((D, F)) / math.sqrt(D),
                0.1 * rng.standard_normal(F), rng.standard_normal((F, D)) / math.sqrt(F),
                0.1 * rng.standard_normal(D), rng.standard_normal((S, D)),
                rng.standard_normal((S, D)))
'''


def transformer_file(tmp_path, S, D, F):
    """The benchmark's own transformer function, with an example of these sizes."""
    source = inspect.getsource(workloads.transformer).replace("\n", "\n    ")
    return write(tmp_path, "block.py", HEADER + "    " + source + EXAMPLE.format(S=S, D=D, F=F))


def line_of_heads(path) -> int:
    return path.read_text().splitlines().index("    dh = D // H") + 1


def transformer_args(S, D, F):
    return (*[normal(D, D, scale=D ** -0.5) for _ in range(4)], normal(D, F, scale=D ** -0.5),
            normal(F, scale=0.1), normal(F, D, scale=F ** -0.5), normal(D, scale=0.1),
            normal(S, D), normal(S, D))


def test_a_quotient_of_a_size_and_its_half_power_are_fitted():
    sizes = [{"d1": 128, "d2": 100}, {"d1": 44, "d2": 101}, {"d1": 52, "d2": 101},
             {"d1": 44, "d2": 103}]
    moves = {"d1": 2, "d2": 3}
    fit = antiunify.fit_number([(s["d1"] // 4) ** -0.5 for s in sizes], sizes, 1, moves,
                               {"d1": 4})
    assert fit.expr == "(d1 // 4) ** -0.5"
    assert antiunify.fit_number([s["d1"] // 4 * s["d2"] for s in sizes], sizes, 1, moves,
                                {"d1": 4}).expr == "(d1 * d2) // 4"
    # without the divisor, a size's own square root is no number the compiler makes
    assert antiunify.fit_number([(s["d1"] // 4) ** -0.5 for s in sizes], sizes, 1,
                                moves) is None


def test_the_transformer_at_realistic_sizes_takes_every_multiple_of_the_heads(tmp_path):
    path = transformer_file(tmp_path, 100, 128, 256)
    done = adcompiler("compile", path)
    assert done.returncode == 0, done.stderr
    assert "grad_transformer (1 signature, any sizes)" in done.stderr, done.stderr
    assert "per shape" not in done.stderr
    assert ("  note: grad_transformer takes multiples of 4 only for d1: `dh = D // H` (line "
            f"{line_of_heads(path)}) divides x.shape[1] by 4") in done.stderr, done.stderr
    text = (tmp_path / "block_grad.py").read_text()
    header = text[:text.index('"""', 3)]
    assert ("Sizes that must be multiples of a number (the function divides them by it):\n"
            f"- grad_transformer: any sizes, with d1 a multiple of 4: `dh = D // H` (line "
            f"{line_of_heads(path)}) divides\n  x.shape[1] by 4.") in header, header
    assert "# d1: any multiple of 4 of at least 8; d2, d3: any sizes of at least 2\n" in text
    assert "d1 // 4" in text and "(d1 // 4) ** -0.5" in text
    assert "reshape((100, 4, 32))" not in text and "d1 % 4 == 0" in text
    user = import_path(path)
    cases = []
    for S, D, F in ((100, 128, 256), (7, 8, 5), (150, 64, 96), (33, 132, 40), (256, 256, 512),
                    (2, 12, 3)):
        args = transformer_args(S, D, F)
        cases.append(("grad_transformer", args, reference(user.transformer, args)))
    compare_calls(tmp_path, cases, module="block_grad")   # each took its guard


def test_a_width_not_a_multiple_of_the_heads_is_refused_saying_why(tmp_path):
    assert adcompiler("compile", transformer_file(tmp_path, 100, 128, 256)).returncode == 0
    out = run_isolated("""
        import numpy as np, block_grad as m
        D, F = 130, 20
        args = [np.ones((D, D))] * 4 + [np.ones((D, F)), np.ones(F), np.ones((F, D)),
                                        np.ones(D), np.ones((10, D)), np.ones((10, D))]
        try:
            m.grad_transformer(*args)
        except TypeError as exc:
            print(exc)
    """, tmp_path).splitlines()
    assert out[0] == (
        "grad_transformer(): inconsistent sizes: Wq.shape[0] is 130, but the function needs a "
        f"multiple of 4 (d1): `dh = D // H` (line {line_of_heads(tmp_path / 'block.py')}) divides "
        "x.shape[1] by 4")
    assert out[3] == ("(a named size is any size of at least 2, d1 of at least 8, d1 a multiple "
                      "of 4; the same name, the same size)")


def test_an_example_width_not_a_multiple_stays_per_shape_saying_why(tmp_path):
    """At D = 130 the function fails (4 heads of 32 do not fill 130), so no example has it; a
    division by a size the example does not fill stays a decision, named."""
    path = write(tmp_path, "halves.py", '''
        import numpy as np
        import adcompiler as ad


        @ad.grad
        def f(x):
            n = x.shape[0]
            half = n // 2
            return np.sum(x[:half] ** 2) + np.sum(np.sin(x[half:]))


        def example_f():
            return (np.linspace(0.0, 1.0, 7),)
        ''')
    done = adcompiler("compile", path)
    assert done.returncode == 0
    assert "grad_f is compiled per shape: `half = n // 2` (line 8) decides on a size while " \
        "compiling: len(x) is 7, not a multiple of 2" in done.stderr, done.stderr


def test_an_even_example_takes_every_even_size(tmp_path):
    path = write(tmp_path, "halves.py", '''
        import numpy as np
        import adcompiler as ad


        @ad.grad
        def f(x):
            half = len(x) // 2
            return np.sum(x[:half] ** 2) + np.sum(np.sin(x[half:]))


        def example_f():
            return (np.linspace(0.0, 1.0, 8),)
        ''')
    done = adcompiler("compile", path)
    assert done.returncode == 0 and "grad_f (1 signature, any sizes)" in done.stderr, \
        done.stderr
    user = import_path(path)
    cases = [("grad_f", (x,), reference(user.f, (x,))) for x in (normal(4), normal(8),
                                                                   normal(5000))]
    compare_calls(tmp_path, cases, module="halves_grad")


def test_a_size_divided_by_a_module_constant_in_a_subscript_of_the_shape(tmp_path):
    path = write(tmp_path, "heads.py", '''
        import numpy as np
        import adcompiler as ad

        HEADS = 3


        @ad.grad
        def f(x):
            heads = np.tanh(x).reshape(x.shape[0], HEADS, x.shape[1] // HEADS)
            return np.sum(np.sum(heads, axis=2) ** 2) * (x.shape[1] // HEADS) ** -0.5


        def example_f():
            return (np.linspace(-1.0, 1.0, 40 * 15).reshape(40, 15),)
        ''')
    done = adcompiler("compile", path)
    assert done.returncode == 0 and "grad_f (1 signature, any sizes)" in done.stderr, \
        done.stderr
    assert "# d1: any size of at least 2; d2: any multiple of 3 of at least 6" in \
        (tmp_path / "heads_grad.py").read_text()
    user = import_path(path)
    cases = [("grad_f", (x,), reference(user.f, (x,)))
             for x in (normal(40, 15), normal(3, 6), normal(500, 99))]
    compare_calls(tmp_path, cases, module="heads_grad")
