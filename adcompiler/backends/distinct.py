"""The check in front of a gradient whose function writes into a parameter: the caller must not
pass one array (or views of one memory) as that parameter and another.

The compiled code works on SSA values: a write into parameter ``x`` updates a private copy, so
another parameter ``y`` that NumPy would see change (``f(a, a)``, ``f(a, a[::-1])``) keeps its
old contents, and the value and gradient would be silently wrong. The generated function
therefore tests, for each written parameter, ``np.shares_memory`` with each other array
parameter (about 0.2 µs a pair, only for such functions) and raises a ValueError that names the
write and says to pass a copy. ``Graph.writes`` (filled by the frontend's in-place lowering)
says which parameters are written, where, and the other array parameters (the user's own:
not a vjp's cotangent or a jvp's tangents, which the code only reads).
"""

from __future__ import annotations


def distinct_guard(graph, xp_name: str = "np") -> list:
    """Source lines raising ValueError where a written parameter shares memory with another."""
    lines = []
    for name, (filename, lineno, text, others) in graph.writes.items():
        if not others:
            continue
        test = " or ".join(f"{xp_name}.shares_memory({name}, {o})" for o in others)
        which = others[0] if len(others) == 1 else "another argument (" + ", ".join(others) + ")"
        message = (f"{graph.name}() writes into its argument {name} ({filename}, line {lineno}: "
                   f"`{text}`), and {which} shares memory with {name}: NumPy would show "
                   f"{which} that write, but the compiled code updates a copy of {name}. "
                   f"Pass separate arrays (e.g. {name}.copy())")
        lines += [f"if {test}:", f"    raise ValueError({message!r})"]
    return lines
