"""Vector-Jacobian and tangent rules of ``einsum`` in normal form (``"ij,jk->ik"``: explicit
output, each operand's letters distinct, one size per letter; see
``adcompiler/frontend/einsum.py``, which brings any ``np.einsum`` call to it).

An einsum is linear in each operand. The cotangent of operand ``k`` is the einsum of ``g`` (with
the output's letters) and the other operands, giving ``k``'s letters; a letter of ``k`` that is
in neither the output nor another operand was summed within ``k`` alone, so its cotangent is
constant along it: computed without it, then broadcast back (``"ij->i"``: ``g[:, None]``
broadcast to ``(i, j)``, a view). The tangent is the einsum with ``k``'s tangent in its place.
:func:`contract` is the one spelling of a contraction, shared by the frontend and the tape: a
lone operand keeping all its letters is a transpose (a view, as NumPy's einsum gives), and 0-d
operands (no letters) are factors multiplied in after.
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
    others = [(t, x) for j, (t, x) in enumerate(zip(ins, xs)) if j != argnum]
    seen = set(out).union(*(t for t, _ in others))
    kept = "".join(c for c in target if c in seen)
    r = contract(ops, [out] + [t for t, _ in others], kept, [g] + [x for _, x in others],
                 optimize)
    if kept == target:
        return r
    if kept:   # the letters summed within operand k alone come back as axes of length 1
        r = ops.expand_dims(r, axis=tuple(i for i, c in enumerate(target) if c not in seen))
    return ops.broadcast_to(r, ops.shape(xs[argnum]))


def einsum_jvp(ops, argnum, dx, ans, *xs, subscripts, optimize=False):
    ins, out = split(subscripts)
    return contract(ops, ins, out, [*xs[:argnum], dx, *xs[argnum + 1:]], optimize)


# ---- Einstein sums --------------------------------------------------------------------------
defvjp_argnum("einsum", einsum_vjp)
defjvp_argnum("einsum", einsum_jvp)
