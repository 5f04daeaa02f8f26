"""What the command line accepts: files Python imports (any declared encoding), decorators through
aliases, option values, examples; and what ``compile`` makes of forward mode and stop_gradient.
Each compiled gradient is compared with the decorator's or with finite differences."""

import inspect
import json
import textwrap

import numpy as np
import pytest

from adcompiler import cli

from tests.cli.test_cli import adcompiler, import_path, run_isolated, write

MODEL = '''
    import numpy as np
    import adcompiler as ad


    @ad.grad
    def loss(x):
        return np.sum(np.tanh(x) * 2.0)


    def example_loss():
        return (np.array([0.5, -1.0]),)
'''


def numeric_grad(f, x, h=1e-6):
    out = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = h
        out.flat[i] = (f(x + e) - f(x - e)) / (2 * h)
    return out


# ---- encodings ---------------------------------------------------------------------------------
@pytest.mark.parametrize("prefix, encoding", [
    (b"# -*- coding: latin-1 -*-\n# caf\xe9\n", "latin-1"),
    (b"\xef\xbb\xbf", "utf-8"),                    # a BOM
    (b"# \xc3\xa9t\xc3\xa9\r\n", "utf-8"),         # UTF-8 with CRLF lines
])
def test_modules_python_imports_compile_whatever_their_encoding(tmp_path, prefix, encoding):
    text = textwrap.dedent(MODEL).lstrip("\n")
    path = tmp_path / "enc.py"
    path.write_bytes(prefix + text.encode(encoding))
    before = path.read_bytes()
    done = adcompiler("compile", path)
    assert done.returncode == 0, done.stderr
    assert path.read_bytes() == before
    x = np.array([0.3, -0.7, 1.1])
    got = import_path(tmp_path / "enc_grad.py").grad_loss(x)
    np.testing.assert_allclose(got, numeric_grad(lambda v: np.sum(np.tanh(v) * 2.0), x),
                               rtol=1e-7)


def test_undecodable_bytes_are_located_in_the_users_file(tmp_path):
    path = tmp_path / "bad.py"
    path.write_bytes(b"import numpy as np\n\n# caf\xe9\n")
    done = adcompiler("show", f"{path}:f")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"{path}:3:6: error: {path} is not valid utf-8 text: byte "
                                  "0xe9 on line 3")
    assert "coding: latin-1" in done.stderr


def test_located_columns_count_characters_and_lines_count_as_python_does(tmp_path):
    path = tmp_path / "cols.py"
    path.write_bytes("import numpy as np\nimport adcompiler as ad\n# \x0c form feed\r\n\n"
                     "@ad.grad(backend='é', wrt=W)\ndef f(x):\n    return np.sum(x)\n"
                     .encode("utf-8"))
    done = adcompiler("show", f"{path}:f", "--shape", "x=3")
    assert done.returncode == 2
    header, line, caret = done.stderr.splitlines()[:3]
    assert header.startswith(f"{path}:5:27: error: wrt=W: `W` is not a module-level constant")
    assert line == "    @ad.grad(backend='é', wrt=W)"
    assert caret == "    " + " " * 26 + "^"


# ---- decorators --------------------------------------------------------------------------------
DECORATED = '''
    import numpy as np
    import adcompiler
    from adcompiler import value_and_grad as vag
    import adcompiler as ad

    WRT = ("a", "b")


    @vag
    def cube(x):
        return np.sum(x ** 3)


    @ad.grad(wrt=WRT)
    def pair(a, b):
        return np.sum(a * b ** 2)


    @ad.grad(wrt=np.array([0]))
    def bad(a):
        return np.sum(a)


    @ad.jacobian
    def jac(x):
        return x ** 3


    @adcompiler.hessian
    def hess(x):
        return np.sum(x ** 3)


    def plain(x):
        return np.sum(np.exp(x))


    def example_cube(): return (np.array([1.0, 2.0]),)
    def example_pair(): return (np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    def example_bad(): return (np.ones(2),)
    def example_jac(): return (np.ones(2),)
    def example_hess(): return (np.ones(2),)
    def example_plain(): return (np.ones(2),)
'''


def test_decorators_are_recognised_through_aliases_and_constants(tmp_path):
    path = write(tmp_path, "deco.py", DECORATED.replace("wrt=np.array([0])", "wrt=0"))
    done = adcompiler("compile", path)
    assert done.returncode == 0, done.stderr
    assert "value_and_grad_cube (1 signature" in done.stderr
    assert "note: jac is left out of" in done.stderr and "@adcompiler.jacobian" in done.stderr
    assert "note: hess is left out of" in done.stderr and "@adcompiler.hessian" in done.stderr
    m = import_path(tmp_path / "deco_grad.py")
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    value, grad = m.value_and_grad_cube(x)
    assert value == 9.0 and np.array_equal(grad, 3 * x ** 2)
    da, db = m.grad_pair(x, y)
    assert np.array_equal(da, y ** 2) and np.array_equal(db, 2 * x * y)
    assert np.array_equal(m.grad_bad(x), np.ones(2))
    assert not hasattr(m, "grad_jac") and not hasattr(m, "hessian_hess")
    shown = adcompiler("show", f"{path}:cube")
    assert shown.returncode == 0 and "def value_and_grad_cube(x):" in shown.stdout


def test_a_decorator_mistake_fails_only_its_function(tmp_path):
    path = write(tmp_path, "deco.py", DECORATED)
    done = adcompiler("compile", path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"{path}:19:14: error: wrt= must be a literal")
    assert not (tmp_path / "deco_grad.py").exists()
    for name, expected in [("plain", "def grad_plain(x):"), ("pair", "def grad_pair(a, b):")]:
        shown = adcompiler("show", f"{path}:{name}")
        assert shown.returncode == 0, shown.stderr
        assert expected in shown.stdout
    shown = adcompiler("show", f"{path}:jac")
    assert shown.returncode == 2
    assert shown.stderr.startswith(f"{path}:24:2: error: jac is marked @adcompiler.jacobian, "
                                   "which the command line does not compile")


def test_a_function_calling_a_custom_vjp_is_refused_not_silently_changed(tmp_path):
    path = write(tmp_path, "cv.py", '''
        import numpy as np
        import adcompiler as ad


        @ad.custom_vjp
        def clip(x):
            return x


        def clip_fwd(x):
            return x, None


        def clip_bwd(res, g):
            return (np.clip(g, -0.1, 0.1),)


        clip.defvjp(clip_fwd, clip_bwd)


        @ad.grad
        def f(x):
            return np.sum(clip(x) ** 2)


        def example_f():
            return (np.ones(3),)
        ''')
    done = adcompiler("compile", path)
    assert done.returncode == 2
    assert done.stderr.startswith(f"{path}:5:2: error: f calls clip, a custom_vjp function")
    assert not (tmp_path / "cv_grad.py").exists()


# ---- options -----------------------------------------------------------------------------------
@pytest.mark.parametrize("args, message", [
    (("check", "m.py", "--rtol", "0"), "argument --rtol: must be a number above 0"),
    (("check", "m.py", "--rtol=-1e-3"), "argument --rtol: must be a number above 0"),
    (("check", "m.py", "--max-entries", "0"), "argument --max-entries: must be at least 1"),
    (("check", "m.py", "--max-entries", "-5"), "argument --max-entries: must be at least 1"),
    (("check", "m.py", "--seed", "-1"), "argument --seed: must be 0 or more"),
    (("check", "m.py", "--shape", "s=3"), "--shape s=3: loss has no parameter 's'"),
    (("compile", "m.py", "--shape", "s=3"), "--shape s=3: loss has no parameter 's'"),
    (("show", "m.py:loss", "--shape", "x=3,,4"), "argument --shape: 'x=3,,4': the sizes must"),
    (("show", "m.py:loss", "--shape", "x="), "argument --shape: 'x=': the sizes must"),
    (("show", "m.py:loss", "--shape", "x=3:floot"), "'floot' is not a NumPy number dtype"),
    (("show", "m.py:loss", "--shape", "x=3", "--shape", "x=4"), "--shape names x twice"),
])
def test_option_values_that_make_no_sense_are_refused(tmp_path, args, message):
    write(tmp_path, "m.py", MODEL)
    done = adcompiler(*args, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert message in done.stderr
    assert "all gradients agree" not in done.stdout
    assert not (tmp_path / "m_grad.py").exists()


def test_good_option_values_are_used(tmp_path, capsys):
    path = write(tmp_path, "m.py", MODEL)
    code = cli.main(["check", str(path), "--rtol", "1e-4", "--max-entries", "1", "--shape",
                     "x=(3,)"])
    out = capsys.readouterr().out
    assert code == 0 and "loss (x: float64[3])" in out and "all gradients agree" in out


# ---- compile --mode forward keeps the user's signature ---------------------------------------
KEYWORDS = '''
    import numpy as np
    import adcompiler as ad


    @ad.grad
    def kw(x, scale=2.0, *, power=2.0):
        return np.sum(scale * x ** power)


    @ad.vjp
    def kv(x, *, c: float = 2.0):
        return c * x ** 2


    def example_kw():
        return (np.linspace(1.0, 2.0, 3),)


    def example_kv():
        return (np.linspace(1.0, 2.0, 3),)
'''


def test_forward_mode_keeps_defaults_and_keyword_only_parameters(tmp_path):
    path = write(tmp_path, "kw.py", KEYWORDS)
    assert adcompiler("compile", path, "--mode", "forward", "-o",
                      tmp_path / "kw_fwd.py").returncode == 0
    assert adcompiler("compile", path).returncode == 0
    fwd, rev = import_path(tmp_path / "kw_fwd.py"), import_path(tmp_path / "kw_grad.py")
    for name in ("grad_kw", "vjp_kv"):
        assert inspect.signature(getattr(fwd, name)) == inspect.signature(getattr(rev, name))
    x = np.array([1.0, 1.5, 2.0])
    for args, kwargs in [((), {}), ((3.0,), {"power": 3.0})]:
        scale, power = (args or (2.0,))[0], kwargs.get("power", 2.0)
        expected = numeric_grad(lambda v: np.sum(scale * v ** power), x)
        np.testing.assert_allclose(fwd.grad_kw(x, *args, **kwargs), expected, rtol=1e-7)
        np.testing.assert_allclose(rev.grad_kw(x, *args, **kwargs), expected, rtol=1e-7)
    ct = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(fwd.vjp_kv(x, c=3.0, cotangent=ct), 6.0 * x * ct, rtol=1e-12)


# ---- stop_gradient -----------------------------------------------------------------------------
def test_stop_gradient_compiles_to_a_module_that_needs_only_numpy(tmp_path):
    path = write(tmp_path, "sg.py", '''
        import numpy as np
        import adcompiler as ad
        from adcompiler import stop_gradient as sg


        @ad.grad
        def sg1(x):
            return np.sum(ad.stop_gradient(x) * x)


        @ad.grad
        def sg2(x):
            return np.sum(sg(x) * x ** 2)


        def example_sg1():
            return (np.linspace(0.1, 0.5, 5),)


        def example_sg2():
            return (np.linspace(0.1, 0.5, 5),)
        ''')
    done = adcompiler("compile", path)
    assert done.returncode == 0, done.stderr
    x = np.array([0.3, -1.2, 2.0, 0.7])
    got = json.loads(run_isolated("""
        import json, numpy as np, sg_grad as m
        x = np.array([0.3, -1.2, 2.0, 0.7])
        print(json.dumps([m.grad_sg1(x).tolist(), m.grad_sg2(x).tolist(), m.sg1(x), m.sg2(x)]))
    """, tmp_path))
    user = import_path(path)   # the decorated functions: adcompiler's own gradients
    np.testing.assert_allclose(got[0], user.sg1(x), rtol=1e-15)
    np.testing.assert_allclose(got[1], user.sg2(x), rtol=1e-15)
    np.testing.assert_allclose(got[0], x, rtol=1e-15)
    np.testing.assert_allclose(got[1], 2 * x ** 2, rtol=1e-15)
    assert got[2:] == pytest.approx([np.sum(x * x), np.sum(x ** 3)], rel=1e-15)


# ---- examples, targets, the header -------------------------------------------------------------
def test_example_mistakes_name_the_example_function(tmp_path):
    path = write(tmp_path, "ex.py", '''
        import numpy as np
        import adcompiler as ad


        @ad.grad
        def b(x, y):
            return np.sum(x * y)


        def example_b():
            return (np.ones(3),)


        @ad.grad
        def h(x):
            return np.sum(x ** 2)


        def example_h():
            return []
        ''')
    done = adcompiler("show", f"{path}:b")
    assert done.returncode == 2
    assert done.stderr.startswith(f"{path}:10:1: error: example_b() gives 1 argument for "
                                  "b(x, y): missing a required argument: 'y'")
    assert "return one value per parameter of b(x, y), in a tuple" in done.stderr
    done = adcompiler("show", f"{path}:h")
    assert done.returncode == 2
    assert done.stderr.startswith(f"{path}:19:1: error: example_h() gives x = [], an empty "
                                  "list, so no example inputs for h(x)")


def test_a_directory_as_a_target_says_so(tmp_path):
    (tmp_path / "cli").mkdir()
    for args in (("show", "cli:f"), ("check", "cli"), ("graph", "cli:f", "-o", "g.dot")):
        done = adcompiler(*args, cwd=tmp_path)
        assert done.returncode == 2 and "Errno" not in done.stderr
        assert "cli is a directory: expected PATH.py:FUNCTION" in done.stderr


def test_the_header_lists_per_shape_reasons_with_one_full_stop(tmp_path):
    path = write(tmp_path, "ar.py", '''
        import numpy as np
        import adcompiler as ad


        @ad.grad
        def ar(x):
            return np.sum(x * np.arange(3.0))


        def example_ar():
            return (np.ones(3),)
        ''')
    done = adcompiler("compile", path)
    assert done.returncode == 0, done.stderr
    header = (tmp_path / "ar_grad.py").read_text().split('"""')[1]
    assert "- grad_ar: its sizes are tied, to each other or to a number in the code" in header
    # the size that stays, after the reason (its own full stop dropped, not doubled)
    assert header.rstrip().endswith(" (3,); so len(x) stays 3.")


def test_a_wrt_naming_no_parameter_is_located(tmp_path):
    path = write(tmp_path, "wz.py", '''
        import numpy as np
        import adcompiler as ad


        @ad.grad(wrt="zz")
        def f(x):
            return np.sum(x)
        ''')
    done = adcompiler("show", f"{path}:f", "--shape", "x=2")
    assert done.returncode == 2
    assert done.stderr.startswith(f"{path}:5:14: error: wrt='zz' is not a parameter of f "
                                  "(its parameters: x)")


def test_one_modules_mistake_does_not_stop_a_directory_compile(tmp_path):
    write(tmp_path, "a_ints.py", '''
        import numpy as np
        import adcompiler as ad


        @ad.grad
        def e(x):
            return np.sum(x ** 2)


        def example_e():
            return (np.array([1, 2, 3]),)
        ''')
    write(tmp_path, "b.py", MODEL)
    done = adcompiler("compile", tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{tmp_path / 'a_ints.py'}: cannot differentiate with respect to 'x'" in done.stderr
    assert "compiled 1 of 2 modules (1 failed, 0 without marked functions)" in done.stderr
    x = np.array([0.2, -0.4])
    np.testing.assert_allclose(import_path(tmp_path / "b_grad.py").grad_loss(x),
                               2.0 * (1 - np.tanh(x) ** 2), rtol=1e-14)


def test_version_names_adcompiler_python_and_numpy():
    import sys
    import adcompiler as ad
    done = adcompiler("--version")
    assert done.returncode == 0
    python = ".".join(map(str, sys.version_info[:3]))
    assert done.stdout.strip() == (f"adcompiler {ad.__version__} (Python {python}, "
                                   f"NumPy {np.__version__})")
