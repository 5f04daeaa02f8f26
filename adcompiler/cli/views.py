"""What ``adcompiler show`` prints: the generated source or the IR, whole or one phase of it.

Invariant: a part is a selection of the whole text's lines, plus one ``...`` line marking what
was left out; it is never re-rendered, so ``--forward`` and ``--adjoint`` show lines exactly as
the whole view has them.
"""

from __future__ import annotations

GRAD_OF = "# grad of:"


def source_part(source: str, part) -> str:
    """The generated function's forward part (before its first ``# grad of:`` block) or its
    adjoint part (helpers, the header, and every line from that block on)."""
    if part is None:
        return source
    lines = source.rstrip("\n").split("\n")
    start = max(i for i, ln in enumerate(lines) if ln.startswith("def "))
    body = lines[start + 1:]
    split = next((i for i, ln in enumerate(body) if ln.strip().startswith(GRAD_OF)
                  and not ln.startswith("        ")), len(body) - 1)
    if part == "forward":
        out = lines[start:start + 1] + body[:split] + \
            ["    ...  # the adjoint part: adcompiler show --adjoint"]
    else:
        out = lines[:start + 1] + ["    ...  # the forward part: adcompiler show --forward"] + \
            body[split:]
    return "\n".join(out) + "\n"


def ir_part(text: str, part) -> str:
    """The IR's header and constants, then only the top-level nodes of one phase (each with its
    regions; the ``adjoint`` part of forward mode is its tangent nodes); the adjoint part keeps
    the ``return``."""
    if part is None:
        return text
    lines = text.rstrip("\n").split("\n")
    out, phase = [lines[0]], "forward"
    for line in lines[1:-1]:
        top = line.startswith("  ") and not line.startswith("   ")
        if top and line.startswith("  # ") and line[4:].isidentifier():
            phase = "forward" if line[4:] == "forward" else "adjoint"  # tangent: forward mode
        elif top and (line.endswith(" = const") or line.startswith("  return ")):
            if part == "adjoint" or not line.startswith("  return "):
                out.append(line)
            continue
        if phase == part:
            out.append(line)
    if part == "forward":
        out.append("  ...  # the adjoint part: adcompiler show --ir --adjoint")
    return "\n".join(out + [lines[-1]])
