"""Whether the source read for a function is the code it runs: a file edited after its module
was imported must not be compiled in place of the function Python runs.

``grad`` reads a function's text from its file; Python runs the code object it compiled at
import. After an edit (``x ** 2`` to ``x ** 3``) without a reload, the two differ, and a
gradient of the new text beside a function that computes the old would be silently wrong.
:func:`check_fresh` compiles the ``def`` read from the file, where it stands (inside a function
that binds the original's free names, so closures compile as closures; inside a class of the
same name for a method, so private names mangle alike), and compares its :func:`code_shape`
with the function's own code: bytecode, names, constants, nested code, not line numbers. A
difference is a located error saying the file changed. :func:`code_shape` also goes into the
on-disk cache's key, so a cache entry is never found for a text the function does not run.

Checked where Python's own source loader compiled the module (``SourceFileLoader``, ``__main__``
run from a file): an import hook that rewrites code (pytest's assertion rewriting, typeguard)
compiles other code than the text says, and such a function is not checked.
"""

from __future__ import annotations

import __future__
import ast
import importlib.machinery
import symtable
import types

from ...errors import CompileError

_FUTURE = 0
for _name in __future__.all_feature_names:
    _FUTURE |= getattr(__future__, _name).compiler_flag
_WRAPPER = "__adcompiler_source_check__"
_TYPE_PARAMS = {"type_params": []} if "type_params" in ast.FunctionDef._fields else {}


def code_shape(code: types.CodeType) -> tuple:
    """What a code object computes, without where it sits: its bytecode, names and constants,
    nested code objects alike (a frozenset's items sorted, so the shape is the same in every
    process)."""
    return (code.co_code, code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars,
            code.co_argcount, code.co_kwonlyargcount, code.co_posonlyargcount,
            tuple(_const_shape(c) for c in code.co_consts))


def _const_shape(value):
    if isinstance(value, types.CodeType):
        return code_shape(value)
    if isinstance(value, frozenset):
        return ("frozenset", tuple(sorted(map(repr, value))))
    if isinstance(value, tuple):
        return ("tuple", tuple(_const_shape(v) for v in value))
    return (type(value).__name__, repr(value))


def check_fresh(fn, tree: ast.FunctionDef, lines: list, error):
    """Raise ``error(message, hint)`` (located at the def) where ``tree``, read from the file
    whose ``lines`` linecache holds, does not compile to ``fn``'s code."""
    code = fn.__code__
    if not _checkable(fn):
        return
    try:
        compiled = _compile_where_it_stands(fn, tree, _imported(lines))
    except (SyntaxError, ValueError, TypeError, RecursionError):
        return  # (what Python compiled from this text, it compiles again: not reached)
    if compiled is None or code_shape(compiled) == code_shape(code):
        return
    raise error(f"the source of {fn.__name__!r} in {code.co_filename} changed after its module "
                f"was imported: Python still runs the old {fn.__name__}, and the gradient "
                "would be taken of the new text",
                "reload the module (importlib.reload, or restart the kernel) or re-run the "
                "cell that defines it, then take the gradient again")


def _checkable(fn) -> bool:
    """Whether Python's own source loader compiled ``fn``'s module from its file (read from the
    module's globals: a module loaded from a spec need not be in ``sys.modules``)."""
    namespace = fn.__globals__
    return (type(namespace.get("__loader__")) is importlib.machinery.SourceFileLoader
            and namespace.get("__file__") == fn.__code__.co_filename)


def _imported(lines: list) -> tuple:
    """The names the module binds by ``import`` (Python compiles ``np.sum(x)`` otherwise where
    ``np`` is a module imported by name: a method call cannot be one)."""
    held = _IMPORTED.get(id(lines))
    if held is None or held[0] is not lines:
        table = symtable.symtable("".join(lines), "<module>", "exec")
        names = tuple(sorted(s.get_name() for s in table.get_symbols() if s.is_imported()))
        held = _IMPORTED[id(lines)] = (lines, names)
    return held[1]


_IMPORTED: dict = {}  # id(the file's lines, as linecache holds them) -> (them, their names)


def _compile_where_it_stands(fn, tree, imported):
    """``tree`` compiled as ``fn``'s was: in a module importing what its module imports, inside
    a function binding ``fn``'s free names, and inside a class for a method; its code object,
    or None where it cannot be found."""
    code = fn.__code__
    bare = ast.FunctionDef(name=tree.name, args=tree.args, body=tree.body, decorator_list=[],
                           returns=tree.returns, type_comment=None, **_TYPE_PARAMS)
    ast.copy_location(bare, tree)
    owner = _owner_class(fn)
    inner = [ast.ClassDef(name=owner, bases=[], keywords=[], body=[bare], decorator_list=[],
                          **_TYPE_PARAMS)] if owner else [bare]
    cells = [ast.Assign(targets=[ast.Name(name, ast.Store())], value=ast.Constant(None))
             for name in code.co_freevars if not (owner and name == "__class__")]
    wrapper = ast.FunctionDef(name=_WRAPPER, args=ast.arguments([], [], None, [], [], None, []),
                              body=cells + inner, decorator_list=[], returns=None,
                              type_comment=None, **_TYPE_PARAMS)
    module = ast.Module([ast.Import([ast.alias(name)]) for name in imported] + [wrapper], [])
    ast.fix_missing_locations(module)
    top = compile(module, code.co_filename, "exec", flags=code.co_flags & _FUTURE,
                  dont_inherit=True)
    return _find(top, code.co_name)


def _owner_class(fn):
    """The name of the class ``fn`` is defined in (``C`` of ``C.method``, ``f.<locals>.C.m``)."""
    parts = fn.__qualname__.split(".")[:-1]
    return parts[-1] if parts and parts[-1] != "<locals>" else None


def _find(code, name):
    """The first code object named ``name`` in ``code``'s constants, depth first: the def's own
    before any of its nested functions."""
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found = const if const.co_name == name else _find(const, name)
            if found is not None:
                return found
    return None
