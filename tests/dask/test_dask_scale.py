"""benchmarks/dask_scale.py measures what it says (#32): its data is the same numbers however
often it is generated, chunk by chunk, and every gradient it times (backend="dask", the tape,
by hand in dask.array, map_blocks partial sums) equals NumPy's on those numbers to 1e-12.
On Dask's threaded scheduler, small sizes."""

import numpy as np
import pytest

import adcompiler as ad
from benchmarks import workloads

dask = pytest.importorskip("dask")
pytest.importorskip("distributed")
from benchmarks import dask_scale  # noqa: E402  (imports Dask lazily, needs it here)


@pytest.fixture(autouse=True)
def threads():
    with dask.config.set(scheduler="threads"):
        yield


def test_the_data_is_generated_chunk_by_chunk_the_same_each_time():
    X, y = dask_scale.data(2_500, d=6, chunk=1_000)
    assert X.chunks == ((1_000, 1_000, 500), (6,)) and y.chunks == ((1_000, 1_000, 500),)
    first, again = X.compute(), X.compute()
    np.testing.assert_array_equal(first, again)
    assert abs(first.mean()) < 0.1 and abs(first.var() - 1.0) < 0.1   # unit variance
    labels = y.compute()
    assert set(np.unique(labels)) == {0.0, 1.0}


@pytest.mark.parametrize("name", sorted(dask_scale.METHODS))
def test_each_timed_gradient_equals_numpys(name):
    X, y = dask_scale.data(2_500, d=6, chunk=1_000)
    w = np.random.default_rng(3).standard_normal(6) * 0.1
    got = dask_scale.METHODS[name]()(w, X, y)
    assert isinstance(got, np.ndarray)
    if name.startswith("generate"):    # the floor: X.sum() and y.sum()
        np.testing.assert_allclose(got, [X.compute().sum(), y.compute().sum()], rtol=1e-12)
        return
    want = ad.grad(workloads.logistic)(w, X.compute(), y.compute())
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
