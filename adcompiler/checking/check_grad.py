"""``check_grad``: the compiled gradient against the dynamic tape and central differences.

Invariants: the function is never handed the caller's arrays (each call gets copies); finite
differences are taken in float64, one entry at a time (the five-point stencil of
:mod:`adcompiler.checking.differences`, step ``eps`` relative to the entry);
an input passes when the compiled gradient agrees with both the tape's and the numerical one
by :mod:`adcompiler.checking.comparison` (the same figure and verdict as ``adcompiler check``:
every entry within ``atol + rtol`` times the larger of the entry and 1% of the largest); a
failure raises :class:`GradientCheckError` naming the input,
the entry that disagrees most and the three values there.
"""

from __future__ import annotations

import copy
import html
from dataclasses import dataclass, field

import numpy as np

from . import differences
from ..api.gradients import grad
from ..api.signature import bind_arguments, resolve_wrt
from .comparison import InputCheck, compare, tape_gradients
from .differences import as_float64
from ..frontend.bindings.trees import is_container, rebuild, split


class GradientCheckError(AssertionError):
    """The compiled gradient disagrees with the tape's or with finite differences."""

    def __init__(self, message, report):
        super().__init__(message)
        self.report = report


@dataclass
class GradCheckReport:
    """What :func:`check_grad` found; ``str()`` prints one line per input."""

    function: str
    inputs: list = field(default_factory=list)
    rtol: float = 0.0
    atol: float = 0.0

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.inputs)

    @property
    def worst(self) -> dict:
        """Per input, the worst relative error of the compiled gradient (against both)."""
        return {c.name: np.nanmax([c.vs_numerical, c.vs_tape]) for c in self.inputs}

    def _rows(self) -> list:
        """``(input, shape, vs finite diff, vs tape, result)`` per input, as text."""
        return [(c.name, str(np.shape(c.compiled)), f"{c.vs_numerical:.2e}",
                 "n/a" if c.tape_note else f"{c.vs_tape:.2e}", "ok" if c.ok else "MISMATCH")
                for c in self.inputs]

    def _title(self) -> str:
        return f"check_grad({self.function}): rtol={self.rtol:g}, atol={self.atol:g}"

    def _skipped(self) -> str | None:
        skipped = next((c.tape_note for c in self.inputs if c.tape_note), None)
        return skipped and f"the dynamic tape could not run {self.function}: {skipped}"

    def __str__(self):
        w = max([12] + [len(c.name) for c in self.inputs])   # p['layers'][0][0]
        lines = [self._title(),
                 f"  {'input':<{w}} {'shape':<12} {'vs finite diff':>15} {'vs tape':>10}  result"]
        lines += [f"  {n:<{w}} {shape:<12} {fd:>15} {tape:>10}  {result}"
                  for n, shape, fd, tape, result in self._rows()]
        if self._skipped():
            lines.append(f"  ({self._skipped()})")
        return "\n".join(lines)

    def _repr_markdown_(self):
        """A notebook shows the report as a table (Markdown, for Jupyter and VS Code)."""
        lines = [f"**{_markdown_cell(self._title())}**: {'ok' if self.ok else 'MISMATCH'}", "",
                 "| input | shape | vs finite diff | vs tape | result |",
                 "| --- | --- | ---: | ---: | --- |"]
        lines += ["| " + " | ".join(_markdown_cell(cell) for cell in row) + " |"
                  for row in self._rows()]
        if self._skipped():
            lines += ["", f"({_markdown_cell(self._skipped())})"]
        return "\n".join(lines)

    def _repr_html_(self):
        """The same table in HTML, for front ends that render no Markdown."""
        head = "".join(f"<th>{h}</th>" for h in ("input", "shape", "vs finite diff",
                                                "vs tape", "result"))
        body = "".join("<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row)
                       + "</tr>" for row in self._rows())
        note = f"<p>({html.escape(self._skipped())})</p>" if self._skipped() else ""
        return (f"<p><b>{html.escape(self._title())}</b>: "
                f"{'ok' if self.ok else 'MISMATCH'}</p><table><thead><tr>{head}</tr></thead>"
                f"<tbody>{body}</tbody></table>{note}")


def _markdown_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("_", "\\_").replace("*", "\\*")


def check_grad(f, *args, wrt=None, rtol=1e-5, atol=1e-6, eps=1e-4, raise_on_failure=True,
               **kwargs) -> GradCheckReport:
    """Check ``adcompiler.grad(f, wrt=wrt)`` at ``args`` against the dynamic tape
    (:func:`adcompiler.tape.dynamic_grad`) and central finite differences in float64.
    ``f`` may be a decorated gradient (``@ad.grad(wrt=...) def loss``): then the gradient it
    computes is checked, with its own ``wrt`` (not the derivative of that gradient).

    Returns a :class:`GradCheckReport` (``.ok``, ``.worst``, one :class:`InputCheck` per wrt
    input); raises :class:`GradientCheckError` (an AssertionError) when an input's compiled
    gradient is not within ``rtol``/``atol`` of both, unless ``raise_on_failure=False``. Where
    the tape cannot run ``f`` (it refuses ``math.*`` on tensors, as PyTorch), the report says
    so and the check is against finite differences alone.
    """
    f, wrt = _undecorated(f, wrt)
    names = grad(f, wrt=wrt).wrt
    compiled = grad(f, wrt=names)(*_copies(args), **_copies(kwargs))
    tape = tape_gradients(f, names, args, kwargs)
    tape = [tape] * len(names) if isinstance(tape, str) else tape
    arguments = bind_arguments(f, args, kwargs)
    report = GradCheckReport(getattr(f, "__name__", repr(f)), rtol=rtol, atol=atol)
    for name, c, t in zip(names, compiled, tape):
        for label, cl, tl, n in _leaf_checks(f, arguments, name, c, t, eps):
            report.inputs.append(compare(label, cl, n, tl, rtol, atol))
    if raise_on_failure and not report.ok:
        raise GradientCheckError(_explain(report), report)
    return report


def _undecorated(f, wrt):
    """``(function, wrt)`` to check: a decorated gradient's primal and its own wrt."""
    from ..api.gradients import GradientFunction, TangentFunction
    if not isinstance(f, GradientFunction) or isinstance(f, TangentFunction) or \
            f.mode not in ("grad", "value_and_grad"):
        return f, 0 if wrt is None else wrt
    if wrt is not None and resolve_wrt(f.primal, wrt) != f.wrt:
        raise TypeError(f"check_grad of {f.mode}({f.primal.__name__}, wrt={f.wrt!r}) checks "
                        f"that gradient, with respect to {f.wrt!r}, not wrt={wrt!r}: drop "
                        f"wrt=, or pass the undecorated function")
    return f.primal, f.wrt


def numerical_gradient(f, arguments: dict, name: str, eps=1e-4):
    """d f / d arguments[name] by central differences in float64
    (:mod:`adcompiler.checking.differences`); ``f`` gets copies of every argument on each
    call."""
    names = list(arguments)
    args = [as_float64(copy.deepcopy(v)) for v in arguments.values()]

    def scalar(*xs):
        return float(np.sum(f(**{n: copy.deepcopy(x) for n, x in zip(names, xs)})))
    result = differences.gradient(scalar, args, names.index(name), eps)
    return np.float64(result) if isinstance(result, float) else result


def _leaf_checks(f, arguments: dict, name, compiled, tape, eps):
    """``(label, compiled, tape, numerical)`` for input ``name``: itself, or each array and
    float of a container (labelled ``params['W1']``), its numerical gradient taken with the
    other entries fixed."""
    value = arguments[name]
    if not is_container(value):
        yield name, compiled, tape, numerical_gradient(f, arguments, name, eps)
        return
    structure, leaves = split(value, name)
    got = [x for _, x in split(compiled, name)[1]]
    taped = [tape] * len(leaves) if isinstance(tape, str) else [x for _, x in
                                                                 split(tape, name)[1]]
    others = {n: v for n, v in arguments.items() if n != name}
    for j, (label, _) in enumerate(leaves):
        def scalar(*xs):
            part = rebuild(structure, iter(copy.deepcopy(list(xs))))
            return float(np.sum(f(**{name: part}, **copy.deepcopy(others))))
        start = [as_float64(copy.deepcopy(x)) for _, x in leaves]
        n = differences.gradient(scalar, start, j, eps)
        yield label, got[j], taped[j], np.float64(n) if isinstance(n, float) else n


def _copies(values):
    return copy.deepcopy(values)


def _explain(report) -> str:
    lines = [f"the gradient of {report.function} does not check out:", str(report)]
    for c in report.inputs:
        if c.ok:
            continue
        taped = not c.tape_note
        gap = np.abs(np.asarray(c.compiled, np.float64) - c.numerical)
        if taped:
            gap = np.maximum(gap, np.abs(np.asarray(c.compiled, np.float64) - np.asarray(c.tape)))
        i = np.unravel_index(int(np.argmax(gap)), np.shape(gap)) if np.ndim(gap) else ()
        at = f"[{', '.join(map(str, i))}]" if i else ""
        tape = f"tape {np.asarray(c.tape)[i]!r}, " if taped else ""
        lines.append(f"{c.name}{at}: compiled {np.asarray(c.compiled)[i]!r}, {tape}"
                     f"finite differences {c.numerical[i]!r}")
    return "\n".join(lines)


__all__ = ["check_grad", "GradCheckReport", "InputCheck", "GradientCheckError",
           "numerical_gradient"]
