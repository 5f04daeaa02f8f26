"""A module whose inputs' sizes are tied (``k`` has one entry fewer than ``x``) compiles per
shape, and the note says why in those words, not only as an error in the user's code."""

import numpy as np

from tests.cli.test_cli_failures_and_outputs import import_path, run, write


def test_tied_sizes_are_explained_as_such(tmp_path, capsys):
    module = write(tmp_path, "springs.py", '''
        import numpy as np
        import adcompiler as ad


        @ad.grad
        def loss(k, x):
            f = k * (x[1:] - x[:-1])
            return np.sum(f * f)


        def example_loss():
            return (np.ones(3), np.arange(4.0))
        ''')
    code, _, err = run(capsys, "compile", module)
    assert code == 0 and "grad_loss (1 signature, per shape)" in err
    assert "its sizes are tied, to each other or to a number in the code, so calls must use " \
           "the example's shapes; varied one at a time, they do not broadcast" in err
    m = import_path(tmp_path / "springs_grad.py")
    np.testing.assert_allclose(m.grad_loss(np.ones(3), np.arange(4.0)), [2.0, 2.0, 2.0])
