"""A standalone module's container arguments take every size too (aot/polymorphic.py varies
their leaves as it varies top-level arrays): a params-dict MLP compiled at hidden 64, batch
300, called in a process without adcompiler at other hidden sizes and batches, equals
adcompiler.value_and_grad there; sizes that disagree are named."""

import importlib.util
import pickle
import textwrap

import numpy as np

from tests.cli.test_cli import adcompiler, run_isolated, write

MODEL = '''
    import numpy as np
    import adcompiler as ad


    @ad.value_and_grad
    def loss(params, x, y):
        h = np.tanh(x @ params["W1"] + params["b1"])
        z = h @ params["W2"] + params["b2"]
        return np.mean((z - y) ** 2)


    def example_loss():
        rng = np.random.default_rng(0)
        p = {"W1": rng.normal(size=(2, 64)), "b1": np.zeros(64),
             "W2": rng.normal(size=(64, 1)), "b2": np.zeros(1)}
        return p, rng.normal(size=(300, 2)), rng.normal(size=(300, 1))
    '''


def test_a_params_dict_module_takes_other_layer_sizes(tmp_path):
    model = write(tmp_path, "dict_mlp.py", MODEL)
    done = adcompiler("compile", model.name, "-o", "dict_mlp_grad.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "1 signature, any sizes" in done.stderr
    rng = np.random.default_rng(1)
    cases = []
    for hidden, batch in ((16, 50), (128, 256), (3, 2)):
        p = {"W1": rng.normal(size=(2, hidden)), "b1": rng.normal(size=hidden),
             "W2": rng.normal(size=(hidden, 1)), "b2": rng.normal(size=1)}
        cases.append((p, rng.normal(size=(batch, 2)), rng.normal(size=(batch, 1))))
    (tmp_path / "cases.pkl").write_bytes(pickle.dumps(cases))
    run_isolated(textwrap.dedent("""
        import pickle, numpy as np, dict_mlp_grad
        cases = pickle.load(open("cases.pkl", "rb"))
        out = [dict_mlp_grad.value_and_grad_loss(*c) for c in cases]
        bad = {"W1": np.ones((2, 5)), "b1": np.ones(4), "W2": np.ones((5, 1)),
               "b2": np.zeros(1)}
        try:
            dict_mlp_grad.value_and_grad_loss(bad, np.ones((3, 2)), np.ones((3, 1)))
        except TypeError as err:
            out.append(str(err).splitlines()[0])
        pickle.dump(out, open("out.pkl", "wb"))
        """), tmp_path)
    out = pickle.loads((tmp_path / "out.pkl").read_bytes())
    spec = importlib.util.spec_from_file_location("dict_mlp_here", model)
    user = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(user)
    for case, (value, grads) in zip(cases, out):
        expected_value, expected = user.loss(*case)
        assert value == expected_value
        assert list(grads) == ["W1", "b1", "W2", "b2"]
        for key in grads:
            np.testing.assert_allclose(grads[key], expected[key], rtol=1e-12, atol=1e-14)
    assert "inconsistent sizes" in out[-1] and "params['b1']" in out[-1]
