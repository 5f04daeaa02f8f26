"""Vector-Jacobian and tangent rules of ``einsum`` in normal form (``"ij,jk->ik"``: explicit
output, each operand's letters distinct, one size per letter; see
``adcompiler/frontend/library/einsum.py``, which brings any ``np.einsum`` call to it).

An einsum is linear in each operand. The cotangent of operand ``k`` is the einsum of ``g`` (with
the output's letters) and the other operands, giving ``k``'s letters; a letter of ``k`` that is
in neither the output nor another operand was summed within ``k`` alone, so its cotangent is
constant along it: computed without it, then broadcast back (``"ij->i"``: ``g[:, None]``
broadcast to ``(i, j)``, a view). The tangent is the einsum with ``k``'s tangent in its place.
:func:`contract` is the one spelling of a contraction, shared by the frontend and the tape: a
lone operand keeping all its letters is a transpose (a view, as NumPy's einsum gives), and 0-d
operands (no letters) are factors multiplied in after. An operand whose letters repeat
(``"ii->i"``: the tape's diagonal view; the compiler gathers diagonals instead) gets its
cotangent on that diagonal, zeros elsewhere (:func:`on_diagonal`).
"""

from . import defjvp_argnum, defvjp_argnum


def split(subscripts):
    """``("ij,jk->ik")`` -> ``(["ij", "jk"], "ik")``."""
    terms, out = subscripts.split("->")
    return terms.split(","), out


def contract(ops, ins, out, xs, optimize=False):
    """The einsum of ``xs`` (letters ``ins``, each operand's distinct) into the letters ``out``."""
    factors = [x for term, x in zip(ins, xs) if not term]
    pairs = [(term, x) for term, x in zip(ins, xs) if term]
    if not pairs:
        result = factors.pop(0)
    elif len(pairs) == 1 and len(pairs[0][0]) == len(out):   # a permutation of one operand
        term, result = pairs[0]
        if term != out:
            result = ops.transpose(result, axes=tuple(term.index(c) for c in out))
    else:
        params = {"subscripts": ",".join(t for t, _ in pairs) + "->" + out}
        if optimize:
            params["optimize"] = optimize
        result = ops.einsum(*(x for _, x in pairs), **params)
    for factor in factors:
        result = ops.multiply(result, factor)
    return result


def einsum_vjp(ops, argnum, g, ans, *xs, subscripts, optimize=False):
    ins, out = split(subscripts)
    target = ins[argnum]
    letters = "".join(dict.fromkeys(target))   # a diagonal's letters repeat: "ii->i"
    others = [(t, x) for j, (t, x) in enumerate(zip(ins, xs)) if j != argnum]
    seen = set(out).union(*(t for t, _ in others))
    kept = "".join(c for c in letters if c in seen)
    r = contract(ops, [out] + [t for t, _ in others], kept, [g] + [x for _, x in others],
                 optimize)
    if kept == target:
        return r
    shape = ops.shape(xs[argnum])
    if kept != letters:   # the letters summed within operand k alone come back broadcast
        if kept:
            r = ops.expand_dims(r, axis=tuple(i for i, c in enumerate(letters) if c not in seen))
        lengths = dict(zip(target, shape))
        r = ops.broadcast_to(r, tuple(lengths[c] for c in letters))
    return r if letters == target else on_diagonal(ops, r, target, shape)


def on_diagonal(ops, r, term, shape):
    """A zero array of ``shape`` (axes named by ``term``, a letter repeated) holding ``r`` (one
    axis per distinct letter, in order of first appearance) where its repeated letters agree:
    the adjoint of taking that diagonal (a view, ``np.einsum("ii->i", a)`` on the tape).

    Built of pads and reshapes, exact zeros elsewhere, on any ``ops``: the diagonal's entry
    ``r[i, j, ...]`` sits at the flat position ``i * s_i + j * s_j + ...`` (``s_c``: the sum of
    the C strides of the axes named ``c``), and in order of first appearance each letter's
    stride exceeds the span of all the later ones, so the flat array is built from the last
    letter out: pad the last axis to the letter's stride, merge it into that letter's axis,
    cut the tail past the last entry."""
    size = 1
    for d in shape:
        size *= int(d)
    if size == 0:
        return ops.reshape(r, tuple(shape))
    letters = "".join(dict.fromkeys(term))
    lengths = dict(zip(term, shape))
    strides = {c: 0 for c in letters}
    step = 1
    for c, d in reversed(list(zip(term, shape))):
        strides[c] += step
        step *= int(d)
    a, extent = ops.expand_dims(r, axis=(len(letters),)), 1
    for k in reversed(range(len(letters))):
        c = letters[k]
        a = _padded(ops, a, strides[c] - extent)
        lead = tuple(lengths[l] for l in letters[:k])
        a = ops.reshape(a, lead + (lengths[c] * strides[c],))
        end = (lengths[c] - 1) * strides[c] + extent
        if end != lengths[c] * strides[c]:
            a = ops.getitem(a, (), (("s", None, None, None),) * k + (("s", 0, end, None),))
        extent = end
    return ops.reshape(_padded(ops, a, size - extent), tuple(shape))


def _padded(ops, a, width):
    """``a`` with ``width`` zeros appended along its last axis."""
    if width == 0:
        return a
    shape = ops.shape(a)
    first = ops.getitem(a, (), (("s", None, None, None),) * (len(shape) - 1) + (("s", 0, 1, None),))
    zeros = ops.broadcast_to(ops.zeros_like(first), tuple(shape[:-1]) + (width,))
    return ops.concatenate([a, zeros], axis=len(shape) - 1)


def einsum_jvp(ops, argnum, dx, ans, *xs, subscripts, optimize=False):
    ins, out = split(subscripts)
    return contract(ops, ins, out, [*xs[:argnum], dx, *xs[argnum + 1:]], optimize)


# ---- Einstein sums --------------------------------------------------------------------------
defvjp_argnum("einsum", einsum_vjp)
defjvp_argnum("einsum", einsum_jvp)
