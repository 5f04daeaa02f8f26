"""An example whose sizes coincide (S == D, square matrices, batch == hidden) gives a module
that ties none of them: users' examples often have such numbers, and a module must not keep
two sizes equal because the example's happen to be.

Two things kept them tied (:mod:`adcompiler.aot.polymorphic`): the example's equal sizes were
split one at a time, and the steps of ``x`` and ``y`` must move together (``x - y``), so no
single split compiled; and where the example's code exploits the coincidence (the memory
planner shares a work array between an (S, D) and a (D, D) temporary at S == D only), the
code with the sizes apart is not the example's but for its numbers. Now members alike (the
same axis of arrays of one shape) split together, and a split whose code differs from the
example's is taken where the code at two sets of sizes apart is the same: the body is then
merged from those samples without the example's code, and serves at S == D too. The modules
are called without adcompiler at sizes apart and coincident, against the unoptimised gradient.
"""

import re

from adcompiler.api.signature import bind_arguments, classify_arguments
from adcompiler.ir import sizing
from adcompiler.pipeline import compile_gradient
from tests.aot.test_divided_sizes import transformer_args, transformer_file
from tests.aot.test_every_size import compare_calls, normal, reference
from tests.cli.test_cli import adcompiler, import_path, write

MLP = '''
    import numpy as np

    import adcompiler as ad


    @ad.grad(wrt=("W1", "W2"))
    def mlp(W1, W2, x, y):
        h = np.tanh(x @ W1)
        return np.sum((h @ W2 - y) ** 2)


    @ad.grad(wrt=("W", "V"))
    def chain(W, V, x):
        a = np.tanh(x @ W)
        b = np.sin(a.T @ a)
        c = np.cos(b @ V)
        return np.sum(c * c) + np.sum(np.exp(a) * a)


    def example_mlp():
        rng = np.random.default_rng(0)
        return tuple(rng.standard_normal((64, 64)) * 0.1 for _ in range(4))


    def example_chain():
        rng = np.random.default_rng(2)
        return (rng.standard_normal((96, 96)) * 0.1, rng.standard_normal((96, 96)) * 0.1,
                rng.standard_normal(({steps}, 96)))
'''


def signatures(text) -> list:
    """The body comments' signatures, ``(W: float64[d1, d1], ...)``, joined onto one line."""
    found = re.findall(r"^# grad of \w+ for (\(.*?\))\n(?!#     )", text, re.M | re.S)
    return [" ".join(s.replace("#    ", "").split()) for s in found]


def work_arrays(gradient, args) -> int:
    """How many work arrays the code ``adcompiler compile`` compiles for ``args`` allocates."""
    avals = classify_arguments(bind_arguments(gradient.primal, args, {}), gradient.wrt)
    with sizing.symbolic():
        compiled = compile_gradient(gradient.primal, avals, gradient.wrt, gradient.mode)
    return compiled.source.count("np.empty(")


def test_the_transformer_at_the_benchmarks_sizes_unties_the_steps_from_the_width(tmp_path):
    path = transformer_file(tmp_path, 128, 128, 512)
    done = adcompiler("compile", path)
    assert done.returncode == 0, done.stderr
    assert "grad_transformer (1 signature, any sizes)" in done.stderr, done.stderr
    text = (tmp_path / "block_grad.py").read_text()
    assert "x: float64[d3, d1], y: float64[d3, d1])" in signatures(text)[0], signatures(text)
    assert "# d1: any multiple of 4 of at least 8; d2, d3: any sizes of at least 2\n" in text
    user = import_path(path)
    cases = []
    for S, D, F in ((128, 128, 512), (100, 128, 256), (7, 8, 5), (64, 64, 200), (12, 12, 7),
                    (33, 132, 40), (160, 64, 96)):
        args = transformer_args(S, D, F)
        cases.append(("grad_transformer", args, reference(user.transformer, args)))
    compare_calls(tmp_path, cases, module="block_grad")   # each took its guard


def test_a_batch_equal_to_the_width_and_square_weights_are_untied(tmp_path):
    path = write(tmp_path, "square.py", MLP.format(steps=96))
    done = adcompiler("compile", path)
    assert done.returncode == 0, done.stderr
    assert "grad_mlp (1 signature, any sizes), grad_chain (1 signature, any sizes)" in \
        done.stderr, done.stderr
    mlp, chain = signatures((tmp_path / "square_grad.py").read_text())[::2]
    assert mlp == "(W1: float64[d1, d2], W2: float64[d2, d3], x: float64[d4, d1], y: " \
        "float64[d4, d3])", mlp   # by their roles: input, hidden, output and batch apart
    assert chain == "(W: float64[d1, d2], V: float64[d2, d3], x: float64[d4, d1])", chain
    user = import_path(path)
    cases = []
    for batch, width, hidden, out in ((64, 64, 64, 64), (10, 64, 64, 64), (200, 32, 32, 32),
                                      (7, 7, 7, 7), (2, 3, 3, 3), (64, 16, 64, 5),
                                      (30, 64, 12, 64)):
        args = (normal(width, hidden, scale=0.1), normal(hidden, out, scale=0.1),
                normal(batch, width), normal(batch, out))
        cases.append(("grad_mlp", args, reference(user.mlp, args)))
    for steps, width, hidden, out in ((96, 96, 96, 96), (50, 96, 96, 96), (96, 96, 96, 40),
                                      (30, 8, 8, 70), (5, 5, 5, 5), (96, 20, 96, 96),
                                      (12, 96, 7, 96)):
        args = (normal(width, hidden, scale=0.1), normal(hidden, out, scale=0.1),
                normal(steps, width))
        cases.append(("grad_chain", args, reference(user.chain, args)))
    compare_calls(tmp_path, cases, module="square_grad")


def test_where_the_examples_code_exploits_the_coincidence_the_body_is_compiled_apart(tmp_path):
    """``chain``'s code at S == D shares a work array between an (S, D) and a (D, D)
    temporary, so it is not the code at other sizes but for numbers; the module compiled from
    that example is the one compiled from an example with the sizes apart, byte for byte."""
    user = import_path(write(tmp_path, "probe.py", MLP.format(steps=96)))
    coincident = user.example_chain()
    apart = coincident[:2] + (normal(50, 96),)
    assert work_arrays(user.chain, coincident) < work_arrays(user.chain, apart)
    texts = []
    for steps in (96, 50):
        folder = tmp_path / str(steps)
        folder.mkdir()
        done = adcompiler("compile", write(folder, "square.py", MLP.format(steps=steps)))
        assert done.returncode == 0, done.stderr
        texts.append((folder / "square_grad.py").read_text())
    assert texts[0] == texts[1]


WEIGHTED = '''
    import numpy as np

    import adcompiler as ad


    @ad.grad(wrt=("W", "w"))
    def weighted(W, x, w):
        h = np.tanh(x @ W)
        return np.sum(w[:, None] * h * h) + np.sum(w * w)


    def example_weighted():
        rng = np.random.default_rng(3)
        return (rng.standard_normal((64, 64)) * 0.1, rng.standard_normal((64, 64)),
                rng.standard_normal(64))
'''


def test_sizes_only_splittable_together_are_split_by_their_roles(tmp_path):
    """``x: (S, D)`` with per-step weights ``w: (S,)`` and ``W: (D, D)`` at S == D: neither
    size moves alone (``x``'s steps need ``w``'s, ``x``'s width ``W``'s) and ``x`` and ``w``
    are not of one shape; the classes the function's shapes need equal
    (:mod:`adcompiler.aot.roles`) split them in one step."""
    path = write(tmp_path, "weighted.py", WEIGHTED)
    done = adcompiler("compile", path)
    assert done.returncode == 0, done.stderr
    assert "grad_weighted (1 signature, any sizes)" in done.stderr, done.stderr
    sig = signatures((tmp_path / "weighted_grad.py").read_text())[0]
    assert sig == "(W: float64[d1, d2], x: float64[d3, d1], w: float64[d3])", sig
    user = import_path(path)
    cases = []
    for steps, width, out in ((64, 64, 64), (10, 64, 64), (200, 32, 9), (7, 7, 7), (2, 3, 5),
                              (64, 13, 64), (30, 64, 30)):
        args = (normal(width, out, scale=0.1), normal(steps, width), normal(steps))
        cases.append(("grad_weighted", args, reference(user.weighted, args)))
    compare_calls(tmp_path, cases, module="weighted_grad")


def test_role_classes_join_the_axes_a_shape_error_names():
    """Each lowering's error joins the two axes whose (distinct) sizes it names unequal."""
    from adcompiler.aot import roles
    assert roles.unequal_pair("matmul: shapes (11, 13) and (19, 23) are not aligned "
                              "(13 != 19)", [11, 13, 19, 23]) == (1, 2)
    assert roles.unequal_pair("Mismatch is between arg 0 with shape (11, 23) and arg 1 with "
                              "shape (17, 1).", [11, 17, 23]) == (0, 1)
    assert roles.unequal_pair("(13 != 4)", [11, 13]) is None   # a size a constant fixes
