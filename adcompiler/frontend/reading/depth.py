"""Room to recurse: compiling code whose expressions nest deeper than Python's frame limit.

The compiler recurses once per level of an expression (the lowering, the rendering of a fused
chain, Python's own ``compile`` of a syntax tree): ``a0 * x + a1 * x + ... + a1999 * x`` is a
chain 2,000 deep, past the default limit of 1,000 frames. :func:`with_room` runs the compiling as
it is, and where that runs out of depth, runs it again in a thread of its own whose stack
(:data:`STACK` bytes of address space, touched only as used) has room for :data:`FRAMES` frames,
the recursion limit raised to match while it runs. Depth then costs memory, not a
RecursionError. Invariant: the work is pure (its first, failed run leaves nothing behind; a
compile that raises leaves no cache entry), and what it raises in the thread is raised here;
where even that room is not enough, a CompileError located at the function's ``def`` says so.
"""

from __future__ import annotations

import contextvars
import functools
import sys
import threading

from ...errors import CompileError
from .source import read_function

STACK = 512 * 2 ** 20
FRAMES = 120_000
_ROOMY = threading.local()


def with_room(work):
    """Decorate ``work(fn, ...)``, which compiles the user's function ``fn``, so that it runs
    with room to recurse where it needs it."""
    @functools.wraps(work)
    def roomy(fn, *args, **kwargs):
        try:
            return run_with_room(functools.partial(work, fn, *args, **kwargs))
        except RecursionError:
            raise too_deep(fn) from None
    return roomy


def run_with_room(work):
    """``work()``, again with room to recurse where it runs out of depth; a RecursionError
    still, where even that room is not enough."""
    if getattr(_ROOMY, "on", False):
        return work()
    try:
        return work()
    except RecursionError:
        pass
    return _in_roomy_thread(work)


def _in_roomy_thread(work):
    outcome: dict = {}
    context = contextvars.copy_context()

    def run():
        _ROOMY.on = True
        try:
            outcome["value"] = context.run(work)
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            outcome["error"] = exc

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, FRAMES))
    try:
        old_stack = threading.stack_size(STACK)
        try:
            thread = threading.Thread(target=run, name="adcompiler-deep", daemon=True)
            thread.start()
        finally:
            threading.stack_size(old_stack)
        thread.join()
    finally:
        sys.setrecursionlimit(limit)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


MESSAGE = f"this function nests too deeply to compile (past {FRAMES:,} frames of recursion)"
HINT = "split its longest expression into several statements, each assigning a part"


def too_deep(fn) -> CompileError:
    """The error for a function that nests deeper than even :func:`with_room` allows."""
    message, hint = MESSAGE, HINT
    try:
        source = read_function(fn)
    except CompileError:
        return CompileError(message, hint=hint)
    return source.error(source.tree, message, hint)
