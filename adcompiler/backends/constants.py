"""The comment at the top of generated source that says what its free names hold.

Generated code reads some names it does not define: the user's module-level arrays (under the
user's own names, such as ``W``), arrays the function made while compiling (``np.array([1.0,
2.0])``, ``np.eye(3)``: named ``const``, ``const_1``...), and custom rules it calls. They are
bound in the namespace the code runs in (``g.constants`` on a compiled gradient holds them);
``adcompiler compile`` writes them into the standalone module. The comment lists each with its
type, and the value of small arrays, so ``.source`` reads on its own.
"""

from __future__ import annotations

import numpy as np

SHOWN_ELEMENTS = 8  # arrays up to this size are shown with their values


def constants_comment(constants: dict) -> list[str]:
    """Comment lines describing ``constants`` (name -> value), or none where it is empty."""
    if not constants:
        return []
    lines = ["# Names this code reads but does not define (bound when it loads; a compiled",
             "# gradient's .constants holds them):"]
    for name, value in constants.items():
        lines.append(f"#   {name}: {describe(value)}")
    return ["\n".join(lines)]


def describe(value) -> str:
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        shape = ", ".join(str(d) for d in array.shape)
        text = f"{array.dtype.name}[{shape}]"
        if array.size <= SHOWN_ELEMENTS:
            text += f" = {array.tolist()!r}"
        return text
    if callable(value):
        return f"the function {getattr(value, '__qualname__', repr(value))}"
    return repr(value)
