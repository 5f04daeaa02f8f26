"""The NumPy library's families written once against the templates' ``ops`` protocol (see
:mod:`adcompiler.templates`): the compiler runs them on its Builder, where each call emits a
node, and the dynamic tape on its tensors (``adcompiler.tape.compositions.TapeOps``), where each
call records one; so both record the same primitives, in the same order, and every derivative is
a primitive's rule.

Invariants: these modules import only NumPy, the standard library and :mod:`adcompiler.errors`,
never the frontend, the tape or the IR builder. Their callers bind the arguments and read the
static ones (the compiler's handlers in ``adcompiler/frontend/``, the tape's functions in
``adcompiler/tape/``, each raising its own errors first where it has its own words); what is
still wrong raises NumPy's own error here. Beyond the protocol, a composition may call
``ops.constant(array, name)`` (a constant array), ``ops.const(array, name)`` (one constant per
array object, for the cached ones) and ``ops.fail_if(flag, exception, message)`` (raise where a
0-d flag holds, when the code runs); each module says which it needs.

Modules, one family each: :mod:`.axes` (axis arguments, slices along an axis, ``swapaxes``,
``moveaxis``), :mod:`.statistics` (``var``, ``std``, ``average``, the ``nan*`` reductions),
:mod:`.shifts` (``diff``, ``flip``, ``roll``), :mod:`.stacks` (``atleast_*d``, ``vstack``,
``hstack``, ``column_stack``, ``append``), :mod:`.splits` (``split`` and friends, ``tile``,
``repeat``, ``take``, ``pad``), :mod:`.sorting` (``sort``, ``take_along_axis``, ``median``,
``quantile``), :mod:`.products` (``ufunc.outer``, ``inner``, ``tensordot``, ``trapezoid``,
``cross``), :mod:`.signals` (``polyval``, ``convolve``, ``interp``), :mod:`.einsum_plan` (the
subscripts of ``np.einsum`` brought to the primitive's normal form), :mod:`.diagonals` (a
matrix diagonal's flat positions), :mod:`.solvers` (``slogdet``'s result, ``solve``'s ambiguous
shapes), :mod:`.norms` (``np.linalg.norm``'s sums and maxima), :mod:`.elementwise`
(``logaddexp``, ``round``) and :mod:`.special` (SciPy's ``logsumexp``, ``softmax``,
``log_softmax`` and ``scipy.stats.norm``'s densities and tails).
"""
