"""What a name holds where Python would have a value the compiled code cannot give.

Reading such a name is a located error: :meth:`Unreadable.describe` gives its message and hint.
Invariant: branches and loops pass a marker on instead of merging it, so the error is raised
where the name is read, never where the marker was bound. The subclasses say why: a loop's
target after a loop that may break (:class:`AfterBreak`), a name first bound inside a loop
(:class:`InLoopOnly`); :mod:`..statements.inplace` adds views of an array changed in place
(``Stale``), :mod:`.structured` names that branches or iterations bind differently.
"""

from __future__ import annotations

from dataclasses import dataclass


class Unreadable:
    """What a name holds where Python would have a value the compiled code cannot give: reading
    it is a located error (``describe`` gives its message and hint). Branches and loops pass
    it on instead of merging it."""

    def describe(self, name) -> tuple:
        raise NotImplementedError


@dataclass(frozen=True)
class AfterBreak(Unreadable):
    """A ``for`` loop's target after a loop that may ``break``: its value is the iteration
    that broke, which is known only while running."""

    lineno: int

    def describe(self, name):
        return (f"`{name}` after the loop at line {self.lineno}, which may break, holds the "
                "iteration that broke, which adcompiler does not track",
                f"set a variable before the loop and assign it `{name}` inside it, before "
                "the break, and read that variable here")


@dataclass(frozen=True)
class InLoopOnly(Unreadable):
    """A name first bound inside a loop's body: the loop carries only names bound before it."""

    lineno: int
    counted: bool   # a for loop (else a while loop, which may not run at all)

    def describe(self, name):
        kind = "for" if self.counted else "while"
        why = ("adcompiler carries only names bound before a loop" if self.counted
               else "which may not run at all")
        return (f"`{name}` is first assigned inside the {kind} loop at line {self.lineno}, {why}",
                f"assign `{name}` a starting value of the same shape and dtype before the loop "
                f"(for example `{name} = np.zeros_like(...)`)")
