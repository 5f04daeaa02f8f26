"""A Python function's parameters: the TypeError of a call that does not fit; wrt as names.

Shared by the frontend (a call inside compiled code raises what Python would), the command line
(a decorator's ``wrt``) and the transforms, which all read signatures the same way.
"""

from __future__ import annotations

import inspect


def python_call_error(fn, args, kwargs) -> TypeError:
    """The TypeError Python raises for ``fn(*args, **kwargs)``, found without running ``fn``:
    the call is made to a stub with ``fn``'s parameters, name and qualified name."""
    sig = inspect.signature(fn)
    params = [p.replace(annotation=p.empty, default=p.empty if p.default is p.empty else None)
              for p in sig.parameters.values()]   # only the names shape Python's message
    namespace: dict = {}
    exec(f"def stub{sig.replace(parameters=params, return_annotation=sig.empty)}: pass",
         namespace)
    stub = namespace["stub"]
    code = fn.__code__
    stub.__code__ = stub.__code__.replace(co_name=code.co_name, **_qualname(code))
    stub.__name__, stub.__qualname__ = fn.__name__, fn.__qualname__
    try:
        stub(*args, **kwargs)
    except TypeError as exc:
        return exc
    return TypeError(f"{fn.__name__}() cannot be called with these arguments")


def _qualname(code) -> dict:
    return {"co_qualname": code.co_qualname} if hasattr(code, "co_qualname") else {}


def resolve_wrt(fn, wrt) -> tuple:
    """``wrt`` as a tuple of parameter names (it accepts names, positions, or one of either)."""
    params = list(inspect.signature(fn).parameters)
    items = wrt if isinstance(wrt, (tuple, list)) else (wrt,)
    if not items:
        raise ValueError(f"wrt is empty: name at least one parameter of {fn.__name__} "
                         f"(its parameters: {', '.join(params)})")
    names = []
    for item in items:
        if isinstance(item, int) and not isinstance(item, bool):
            if not -len(params) <= item < len(params):
                raise ValueError(f"wrt={item}: {fn.__name__} has {len(params)} parameters "
                                 f"({', '.join(params)})")
            names.append(params[item])
        elif item in params:
            names.append(item)
        else:
            raise ValueError(f"wrt={item!r} is not a parameter of {fn.__name__} "
                             f"(its parameters: {', '.join(params)})")
    if len(set(names)) != len(names):
        raise ValueError(f"wrt names a parameter twice: {wrt!r}")
    return tuple(names)
