"""The supported-NumPy tables of the reference, generated from the code so they cannot drift.

Sources, read at build time:

- ``adcompiler.ir.primitives.PRIMS`` (every primitive, its family and spelling) and
  ``ELEMENTWISE`` (the rows of the elementwise ones: ``math.*`` spelling, numba, the tape's
  ``grad_fn`` name);
- ``templates.VJPS``/``VARIADIC`` (reverse-mode rules) and ``JVPS``/``JVP_VARIADIC``
  (forward-mode rules), which say whether each primitive is differentiable in each mode;
- ``adcompiler.frontend.calls.FUNCTIONS``, ``METHODS`` and ``ATTRIBUTES``: the callables, array
  methods and attributes user code may call. A handler defined in ``frontend/calls.py`` maps
  the call onto one primitive (named in the handler's closure); a handler of another frontend
  module spells the call in several primitives (a composition);
- ``adcompiler.tape.numpy_api`` (``FUNCTIONS``, the ufuncs and ``UFUNC_METHODS``) and
  ``adcompiler.tape.Tensor``: what the dynamic tape records.

``python docs/gen_tables.py`` prints the three tables; ``docs/hooks.py`` puts them into
``reference/numpy.md`` where it holds ``<!-- table: NAME -->``.
"""

from __future__ import annotations

import builtins
import math

import numpy as np


def _rules():
    from adcompiler import templates
    reverse = set(templates.VJPS) | set(templates.VARIADIC) if hasattr(templates, "VARIADIC") \
        else set(templates.VJPS)
    reverse = {p for p in reverse if p in templates.VARIADIC
               or any(r is not None for r in templates.VJPS.get(p, ()))}
    forward = {p for p in set(templates.JVPS) | set(templates.JVP_VARIADIC)
               if p in templates.JVP_VARIADIC
               or any(r is not None for r in templates.JVPS.get(p, ()))}
    return reverse, forward


def _mode(prim, rules, differentiable):
    if not differentiable:
        return "no gradient"
    return "yes" if prim in rules else "**no**"


def primitives_table() -> str:
    """One row per primitive of ``PRIMS`` that user code can reach (internal and control
    primitives, which the compiler introduces itself, are left out)."""
    from adcompiler.ir.primitives import ELEMENTWISE_BY_NAME, PRIMS
    reverse, forward = _rules()
    rows = ["| primitive | family | spelled | reverse | forward | `math.*` | numba loops | "
            "tape `grad_fn` |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, prim in PRIMS.items():
        if prim.family in ("internal", "control", "check", "custom"):
            continue
        row = ELEMENTWISE_BY_NAME.get(name)
        math_name = f"`math.{row.math_name}`" if row is not None and row.math else ""
        numba = "" if row is None or row.numba is None else "yes"
        torch = f"`{row.torch}`" if row is not None and row.torch else ""
        rows.append(f"| `{name}` | {prim.family} | `{prim.spell}` | "
                    f"{_mode(name, reverse, prim.differentiable)} | "
                    f"{_mode(name, forward, prim.differentiable)} | {math_name} | {numba} | "
                    f"{torch} |")
    return "\n".join(rows)


def _names(fn) -> list[str]:
    """Every public spelling of ``fn`` in numpy, numpy.linalg, math and builtins."""
    if isinstance(getattr(fn, "__self__", None), np.ufunc):   # np.add.outer, np.maximum.accumulate
        return [f"np.{fn.__self__.__name__}.{fn.__name__}"]
    found = []
    for module, prefix in ((np, "np."), (np.linalg, "np.linalg."), (math, "math."),
                           (builtins, "")):
        for key in dir(module):
            if key.startswith("_"):
                continue
            try:
                if getattr(module, key) is fn:
                    found.append(prefix + key)
            except Exception:  # noqa: BLE001  (deprecated attributes raise on access)
                continue
    if not found:
        module = getattr(fn, "__module__", "") or ""
        found.append(f"{module.split('.')[0]}.{getattr(fn, '__name__', fn)}")
    canonical = getattr(fn, "__name__", None)
    found.sort(key=lambda n: (n.rsplit(".", 1)[-1] != canonical, len(n), n))
    return found


def _primitives_of(handler):
    """The primitives a handler of ``frontend/calls.py`` emits: the names in its closure
    (``_ufunc("exp")``) and the ``b.emit("name", ...)`` calls in its source."""
    import inspect
    import re
    from adcompiler.ir.primitives import PRIMS
    found = [c.cell_contents for c in handler.__closure__ or ()
             if isinstance(c.cell_contents, str) and c.cell_contents in PRIMS]
    try:
        source = inspect.getsource(handler)
    except (OSError, TypeError):
        source = ""
    found += [n for n in re.findall(r'emit\(\s*"(\w+)"', source) if n in PRIMS]
    # one level of the module's own helpers (``_reshape`` calls ``_reshape_to``)
    module = inspect.getmodule(handler)
    for helper in re.findall(r"\b(_\w+)\(", source):
        fn = getattr(module, helper, None)
        if inspect.isfunction(fn) and fn is not handler and fn.__module__ == handler.__module__:
            try:
                found += [n for n in re.findall(r'emit\(\s*"(\w+)"', inspect.getsource(fn))
                          if n in PRIMS]
            except (OSError, TypeError):
                pass
    return list(dict.fromkeys(found))


def _lowering(handler):
    """``(primitive or None, where)``: how the frontend lowers a call."""
    module = getattr(handler, "__module__", "") or ""
    short = module.replace("adcompiler.", "").replace(".", "/") + ".py"
    prims = _primitives_of(handler) if module.endswith("frontend.calls") else None
    if prims is None and getattr(handler, "__qualname__", "").startswith("_math."):
        # math.<libm>(x) on floats: the elementwise primitive whose row names that libm call
        from adcompiler.ir.primitives import ELEMENTWISE
        libm = [c.cell_contents for c in handler.__closure__ or ()
                if isinstance(c.cell_contents, str)]
        prims = [r.name for r in ELEMENTWISE if r.math and r.math_name in libm][:1] or None
    return prims, short


def _tape_function(fn) -> bool:
    import adcompiler.tape  # noqa: F401  (fills the tape's tables)
    from adcompiler.tape import numpy_api
    if isinstance(fn, np.ufunc):   # (SciPy's too: scipy.special.erf)
        return numpy_api._ufunc_prim(fn) is not None or (fn, "__call__") in \
            numpy_api.UFUNC_METHODS
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, np.ufunc):
        return (owner, fn.__name__) in numpy_api.UFUNC_METHODS
    return fn in numpy_api.FUNCTIONS


def _tape_builtin(name) -> str:  # noqa: C901
    """Whether a builtin or ``math`` call works on a tape tensor, by calling it."""
    from adcompiler import tape
    probes = {"abs": lambda f, t: f(t), "max": lambda f, t: f(t, t), "min": lambda f, t: f(t, t),
              "pow": lambda f, t: f(t, 2.0), "float": lambda f, t: f(t),
              "int": lambda f, t: f(t), "len": lambda f, t: f(tape.tensor(np.ones(3)))}
    fn = getattr(builtins, name, None) if "." not in name else getattr(math, name[5:])
    probe = probes.get(name, lambda f, t: f(t))
    try:
        probe(fn, tape.tensor(0.5, requires_grad=True))
    except Exception:  # noqa: BLE001  (a refusal is what is recorded)
        return "refused"
    return "records"


def functions_table() -> str:
    """One row per callable of ``frontend.calls.FUNCTIONS``."""
    from adcompiler.frontend import calls
    from adcompiler.ir.primitives import PRIMS
    reverse, forward = _rules()
    entries = []
    for fn, handler in calls.FUNCTIONS.items():
        names = _names(fn)
        if names[0].startswith("adcompiler."):
            continue  # stop_gradient: documented in the API reference
        prims, where = _lowering(handler)
        if prims:
            how = ", ".join(f"`{p}`" for p in prims if p not in ("asarray", "to_float",
                                                                 "to_int", "copy")) \
                or ", ".join(f"`{p}`" for p in prims)
            main = prims[0]   # the call's own primitive; the others reshape around it
            diffs = [main] if PRIMS[main].differentiable and main not in (
                "asarray", "to_float", "to_int", "copy") else []
            rev = "no gradient" if not diffs else ("yes" if all(p in reverse for p in diffs)
                                                   else "**no**")
            fwd = "no gradient" if not diffs else ("yes" if all(p in forward for p in diffs)
                                                   else "**no**")
        elif prims is not None:
            how, rev, fwd = "decided while compiling", "", ""
        else:
            how = f"composition (`{where}`)"
            rev = fwd = "through its primitives"
        if names[0].startswith(("math.",)) or "." not in names[0]:
            tape = _tape_builtin(names[0])
        else:
            tape = "records" if _tape_function(fn) else "values only"
        entries.append((names, how, rev, fwd, tape))
    entries.sort(key=lambda e: (e[0][0].startswith("math."), "." not in e[0][0], e[0][0]))
    rows = ["| call | also spelled | lowered to | reverse | forward | tape |",
            "| --- | --- | --- | --- | --- | --- |"]
    for names, how, rev, fwd, tape in entries:
        also = ", ".join(f"`{n}`" for n in names[1:])
        rows.append(f"| `{names[0]}` | {also} | {how} | {rev} | {fwd} | {tape} |")
    return "\n".join(rows)


def scipy_table() -> str:
    """One row per SciPy function compiled code may call (``frontend/library/special.py``,
    ``frontend/library/factorizations.py``): an elementwise row of module ``scipy.special``, a
    primitive, or a composition. SciPy's linalg functions do not dispatch to tape tensors."""
    from adcompiler.frontend.library.special import library_functions
    from adcompiler.ir.primitives import ELEMENTWISE_BY_NAME
    reverse, forward = _rules()
    rows = ["| call | lowered to | reverse | forward | tape |", "| --- | --- | --- | --- | --- |"]
    for name, (fn, handler) in library_functions().items():
        prims = [c.cell_contents for c in handler.__closure__ or ()
                 if isinstance(c.cell_contents, str) and c.cell_contents in ELEMENTWISE_BY_NAME]
        if prims:
            how, rev, fwd = (f"`{prims[0]}`", _mode(prims[0], reverse, True),
                             _mode(prims[0], forward, True))
        elif name.endswith("polygamma"):
            how, rev, fwd = "`polygamma` (`digamma` for n = 0): n known while compiling", \
                _mode("polygamma", reverse, True), _mode("polygamma", forward, True)
        else:
            how, rev, fwd = "composition (`compositions/special.py`)", *(
                ["through its primitives"] * 2)
        tape = "records" if _tape_function(fn) else "refused"
        rows.append(f"| `{name}` | {how} | {rev} | {fwd} | {tape} |")
    from adcompiler.frontend.library import factorizations   # scipy.linalg's
    from adcompiler.ir.primitives import PRIMS
    for name, (fn, handler) in factorizations.library_functions().items():
        prim = name.rpartition(".")[2]
        if prim in PRIMS:   # solve_triangular: its own primitive
            how, rev, fwd = f"`{prim}`", _mode(prim, reverse, True), _mode(prim, forward, True)
        else:
            how, rev, fwd = "composition (`frontend/library/factorizations.py`)", *(
                ["through its primitives"] * 2)
        rows.append(f"| `{name}` | {how} | {rev} | {fwd} | refused |")
    return "\n".join(rows)


def methods_table() -> str:
    """One row per array method and attribute of ``frontend.calls``."""
    from adcompiler.frontend import calls
    from adcompiler.tape import Tensor
    rows = ["| method or attribute | lowered in | tape |", "| --- | --- | --- |"]
    items = [(f"x.{n}()", h, n) for n, h in calls.METHODS.items()]
    items += [(f"x.{n}", h, n) for n, h in calls.ATTRIBUTES.items()]
    for label, handler, name in sorted(items):
        module = (getattr(handler, "__module__", "") or "").replace("adcompiler.", "")
        rows.append(f"| `{label}` | `{module.replace('.', '/')}.py` | "
                    f"{'yes' if hasattr(Tensor, name) else 'no'} |")
    return "\n".join(rows)


def tape_functions_table() -> str:
    """The tape's PyTorch-style functions (``tape.exp``, ``tape.cat``...): ``__all__`` past
    the classes and transforms, with the first line of each docstring where it has one."""
    from adcompiler import tape
    from adcompiler.tape.factory import FUNCTIONS
    rows = ["| function | what it is |", "| --- | --- |"]
    for name in sorted(FUNCTIONS):
        doc = (getattr(tape, name).__doc__ or "").strip().splitlines()
        rows.append(f"| `tape.{name}` | {doc[0] if doc else ''} |")
    return "\n".join(rows)


def refused_table() -> str:
    """Every public function of ``np``, ``np.linalg`` and ``np.fft`` that does not compile, with
    the reason and what to write instead (``frontend/library/refusals.py``); those marked
    *runs while compiling* compute constants where their arguments are known then."""
    from adcompiler.frontend.calls import FUNCTIONS
    from adcompiler.frontend.library import refusals, static_numpy
    compiled = {id(f) for f in FUNCTIONS}
    rows = ["| function | why | instead | runs while compiling |", "| --- | --- | --- | --- |"]
    for prefix, namespace in (("", np), ("linalg.", np.linalg), ("fft.", np.fft)):
        for name in sorted(dir(namespace)):
            fn = getattr(namespace, name)
            found = refusals.decision(prefix + name)
            if found is None or id(fn) in compiled:
                continue
            why, instead = (cell.replace("|", "\\|") for cell in found)
            rows.append(f"| `np.{prefix}{name}` | {why} | {instead} | "
                        f"{'yes' if static_numpy.foldable(fn) else 'no'} |")
    return "\n".join(rows)


TABLES = {"tape_functions": tape_functions_table, "primitives": primitives_table,
          "functions": functions_table, "methods": methods_table, "scipy": scipy_table,
          "refused": refused_table}


if __name__ == "__main__":
    for name, make in TABLES.items():
        print(f"## {name}\n\n{make()}\n")
