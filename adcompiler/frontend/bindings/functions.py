"""A nested ``def`` or ``lambda`` as the value a name is bound to while compiling.

:class:`LocalFunction` holds the definition's AST, the lowering that defined it and its
defaults; calling one inlines its body (:mod:`..statements.local_functions`). Invariant: a
LocalFunction is never called by Python's own code (``map``, a ``key=``): that is a TypeError
saying to call it directly.
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass

from ..reading.scopes import own_names, own_scope
from ..reading.source import FunctionSource


@dataclass(eq=False)
class LocalFunction:
    """A nested ``def`` or a ``lambda``, bound while compiling; calling it inlines ``src.tree``."""

    node: ast.AST            # the user's FunctionDef or Lambda
    src: FunctionSource      # ``tree`` is a FunctionDef (a lambda's body as its ``return``)
    definer: object          # the Lowering whose scope the free names are read from
    signature: inspect.Signature  # binds a call (its defaults: as at the definition)
    defaults: dict           # parameter name -> its default now (in-place writes update it)
    scopes: tuple = ()       # the definer's comprehensions running at the definition
    reads: frozenset = frozenset()  # the names its body reads from the scopes around it

    @property
    def __name__(self) -> str:
        return self.src.tree.name

    def __call__(self, *args, **kwargs):
        raise TypeError(f"{named(self)} is called by Python's own code here (`map`, a `key=`, "
                        "...), but adcompiler inlines only the calls the compiled code makes; "
                        "call it directly (a list comprehension for `map`)")

    @property
    def in_words(self) -> str:
        kind = "lambda" if isinstance(self.node, ast.Lambda) else f"nested def `{self.node.name}`"
        return f"the {kind} of line {self.node.lineno}"

    def local_names(self) -> set:
        """The names Python makes local to the body: parameters and every name it binds."""
        tree = self.src.tree
        stores = {n.id for n in own_scope(tree.body)
                  if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        stores |= {n.name for n in own_scope(tree.body) if isinstance(n, ast.FunctionDef)}
        return (stores - own_names(tree)) | set(self.signature.parameters)


def named(func: LocalFunction) -> str:
    """How messages name it: ``this lambda``, or the def's name in backquotes."""
    return "this lambda" if isinstance(func.node, ast.Lambda) else f"`{func.node.name}`"
