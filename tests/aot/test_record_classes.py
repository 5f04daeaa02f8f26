"""Parameter containers of NamedTuple and dataclass classes in ``adcompiler compile`` modules
(issue 29, part 1): the command line builds the classes a module defines with fields only
from their syntax (frontend/reading/records.py), so ``example_f()`` can make its arguments;
the module copies the definitions, takes instances of the user's own classes (a class of that
name with those fields) and returns each gradient as an instance of the argument's class."""

import importlib.util
import json
import textwrap

import numpy as np

import adcompiler as ad
from tests.cli.test_cli import adcompiler, run_isolated, write

MODEL = '''
    from dataclasses import dataclass
    from typing import NamedTuple

    import numpy as np
    import adcompiler as ad


    class Layer(NamedTuple):
        """One dense layer."""
        W: np.ndarray
        b: np.ndarray


    @dataclass(frozen=True)
    class Head:
        v: np.ndarray
        scale: float = 2.0


    @ad.grad(wrt=("layer", "head"))
    def loss(layer, head, x):
        h = np.tanh(x @ layer.W + layer.b)
        return np.sum((h @ head.v) ** 2) * head.scale


    def example_loss():
        return Layer(np.ones((3, 4)) * 0.1, np.zeros(4)), Head(np.ones(4), 2.0), np.ones((5, 3))
    '''

USER_CLASSES = '''
    from dataclasses import dataclass
    from typing import NamedTuple
    import numpy as np

    class Layer(NamedTuple):
        W: np.ndarray
        b: np.ndarray

    @dataclass(frozen=True)
    class Head:
        v: np.ndarray
        scale: float = 2.0
    '''


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_module_takes_the_users_namedtuples_and_dataclasses(tmp_path):
    model = write(tmp_path, "record_model.py", MODEL)
    write(tmp_path, "user_classes.py", USER_CLASSES)
    done = adcompiler("compile", model.name, "-o", "record_grads.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rng = np.random.default_rng(0)
    W, b, v, x = (rng.normal(size=s) for s in ((3, 4), (4,), (4,), (7, 3)))
    np.savez(tmp_path / "inputs.npz", W=W, b=b, v=v, x=x)
    user = _load(model, "record_model_here")
    expected = user.loss(user.Layer(W, b), user.Head(v, 2.0), x)
    got = run_isolated(textwrap.dedent("""
        import json, numpy as np, record_grads, user_classes
        a = np.load("inputs.npz")
        out = {}
        for where in (record_grads, user_classes):     # the module's copy, the user's own
            layer, head = record_grads.grad_loss(where.Layer(a["W"], a["b"]),
                                                 where.Head(a["v"], 2.0), a["x"])
            out[where.__name__] = [type(layer).__module__, type(head).__module__,
                                   layer.W.tolist(), layer.b.tolist(), head.v.tolist(),
                                   head.scale]
        try:
            record_grads.grad_loss({"W": a["W"], "b": a["b"]}, None, a["x"])
        except TypeError as err:
            out["error"] = str(err)
        print(json.dumps(out))
        """), tmp_path)
    result = json.loads(got.strip().splitlines()[-1])
    for where in ("record_grads", "user_classes"):
        mod_layer, mod_head, dW, db, dv, scale = result[where]
        assert mod_layer == mod_head == where                 # the argument's own class
        np.testing.assert_allclose(dW, expected[0].W, rtol=1e-12)
        np.testing.assert_allclose(db, expected[0].b, rtol=1e-12)
        np.testing.assert_allclose(dv, expected[1].v, rtol=1e-12)
        assert scale == expected[1].scale
    assert "layer is not record_model.Layer(*, *)" in result["error"]


def test_a_class_with_methods_is_not_built(tmp_path):
    model = write(tmp_path, "methods_model.py", '''
        from typing import NamedTuple
        import numpy as np
        import adcompiler as ad


        class Layer(NamedTuple):
            W: np.ndarray

            def apply(self, x):
                return x @ self.W


        @ad.grad
        def loss(layer, x):
            return np.sum(layer.apply(x))


        def example_loss():
            return Layer(np.ones((3, 2))), np.ones((4, 3))
        ''')
    done = adcompiler("compile", model.name, "-o", "methods_grads.py", cwd=tmp_path)
    assert done.returncode == 2
    assert "NameError: name 'Layer' is not defined" in done.stderr
    assert "Traceback" not in done.stderr
