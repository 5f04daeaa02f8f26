"""verify_plan: the checker of emitted buffer plans rejects the plans the emitter used to write
(a buffer overwritten while another name still reads it, a pool buffer returned) and passes
their fixed forms; each rule and each limit of its model on small hand-written functions."""

import math
import os
import re
import textwrap

import numpy as np
import pytest

import adcompiler as ad
import adcompiler.backends.verify_plan as checker
from adcompiler.backends.verify_plan import PlanError, verify_plan

from tests.backends.test_buffer_aliases import accumulator as reproducer
from tests.backends.test_buffer_aliases import branch_result


def _line(source, text) -> int:
    """The 1-based number of the only line of ``source`` containing ``text``."""
    found = [i for i, ln in enumerate(source.splitlines(), 1) if text in ln]
    assert len(found) == 1, (text, found)
    return found[0]


def _rejects(source, write, holder=None, read=None, also=()):
    """``verify_plan`` raises a PlanError naming the write's line and text, the holder and
    the line and text of its next read; returns the message."""
    with pytest.raises(PlanError) as err:
        verify_plan(source)
    msg = str(err.value)
    assert msg.startswith(f"line {_line(source, write)}: `{write}`"), msg
    if holder is not None:
        assert f"while `{holder}`" in msg, msg
    if read is not None:
        assert msg.endswith(f"is read next at line {_line(source, read)}: `{read}`"), msg
    for text in also:
        assert text in msg, msg
    return msg


def _fn(body, params="x", buffers=2):
    """A generated-looking module: ``grad_f(params)`` taking ``buffers`` pool buffers, then
    ``body``."""
    names = ", ".join(f"_buf{i}" for i in range(buffers)) + ("," if buffers == 1 else "")
    take = f"{names} = _grad_f_buffers.pop() if _grad_f_buffers else _new_grad_f_buffers()"
    body = textwrap.dedent(body).strip("\n")
    lines = [f"def grad_f({params}):", "    " + take] + ["    " + ln for ln in body.splitlines()]
    return "_grad_f_buffers = []\n\n\n" + "\n".join(lines) + "\n"


# ---- the old wrong plans, and their fixed forms ----------------------------------------------

OLD_ALIAS = '''\
_grad_f_buffers = []  # grad_f's work arrays: one set per concurrent call


def _new_grad_f_buffers():
    return (
        np.empty((64, 64), dtype=np.float64),
        np.empty((64, 64), dtype=np.float64),
        np.empty((4, 64, 64), dtype=np.float64),
    )


def grad_f(x):
    _buf0, _buf1, _buf2 = _grad_f_buffers.pop() if _grad_f_buffers else _new_grad_f_buffers()
    c = np.sin(x, out=_buf0)
    acc = np.multiply(c, 0.5, out=_buf1)
    cs = _buf2
    for i in range(4):
        c = np.tanh(c * 0.91 + 0.42, out=cs[i])
        acc = acc + c * c
    # grad of: return np.mean(acc * acc)
    dacc_3 = np.multiply(0.00048828125, acc, out=_buf1)
    # grad of: for i in range(4):
    t1 = np.zeros_like(c)
    dc_1 = t1
    dacc_1 = dacc_3
    for i_1 in reversed(range(4)):
        c_2 = cs[i_1]
        t2 = dacc_1 * c_2
        dc_1 = (dc_1 + t2 + t2) * (1 - c_2 * c_2) * 0.91
    # grad of: c = np.sin(x)
    # dx = (dc_1 + dacc_1 * 0.5) * np.cos(x)
    np.cos(x, out=_buf1)
    np.multiply(dacc_1, 0.5, out=_buf0)
    np.add(dc_1, _buf0, out=_buf0)
    dx = _buf0 * _buf1
    _grad_f_buffers.append((_buf0, _buf1, _buf2))
    return dx
'''

# what the emitter writes today: dacc_3 in a buffer of its own, cos into c's dead buffer
FIXED_ALIAS = (OLD_ALIAS
               .replace("        np.empty((4, 64, 64), dtype=np.float64),\n",
                        "        np.empty((4, 64, 64), dtype=np.float64),\n"
                        "        np.empty((64, 64), dtype=np.float64),\n")
               .replace("_buf0, _buf1, _buf2 = ", "_buf0, _buf1, _buf2, _buf3 = ")
               .replace("acc, out=_buf1)", "acc, out=_buf3)")
               .replace("""    np.cos(x, out=_buf1)
    np.multiply(dacc_1, 0.5, out=_buf0)
    np.add(dc_1, _buf0, out=_buf0)
    dx = _buf0 * _buf1""", """    np.cos(x, out=_buf0)
    np.multiply(dacc_1, 0.5, out=_buf1)
    np.add(dc_1, _buf1, out=_buf1)
    dx = _buf1 * _buf0""")
               .replace("(_buf0, _buf1, _buf2))", "(_buf0, _buf1, _buf2, _buf3))"))


def test_old_alias_plan_is_rejected_at_the_cos_line():
    msg = _rejects(OLD_ALIAS, "np.cos(x, out=_buf1)", "dacc_1",
                   "np.multiply(dacc_1, 0.5, out=_buf0)", also=["pool buffer _buf1"])
    assert "line 32:" in msg and "line 33:" in msg


def test_fixed_alias_plan_passes():
    assert "out=_buf3" in FIXED_ALIAS and "np.cos(x, out=_buf0)" in FIXED_ALIAS
    verify_plan(FIXED_ALIAS)


OLD_WHILE = '''\
_grad_g_buffers = []  # grad_g's work arrays: one set per concurrent call


def _new_grad_g_buffers():
    return (
        np.empty((300, 300), dtype=np.float64),
    )


def grad_g(x):
    _buf0, = _grad_g_buffers.pop() if _grad_g_buffers else _new_grad_g_buffers()
    h = np.sin(x, out=_buf0)
    k = 0
    saved = []
    while k < 3:
        saved.append(h)
        h = np.tanh(h * 1.1)
        k = k + 1
    # grad of: return np.sum(h * h)
    dh_3 = np.multiply(2.0, h, out=_buf0)
    # grad of: while k < 3:
    dh_1 = dh_3
    for k_1 in reversed(range(k)):
        h_2 = saved[k_1]
        t1 = np.tanh(h_2 * 1.1)
        dh_1 = dh_1 * (1 - t1 * t1) * 1.1
    # grad of: h = np.sin(x)
    dx = dh_1 * np.cos(x)
    _grad_g_buffers.append((_buf0,))
    return dx
'''


def test_old_while_plan_is_rejected_for_the_list_that_keeps_h():
    _rejects(OLD_WHILE, "dh_3 = np.multiply(2.0, h, out=_buf0)", "saved",
             "h_2 = saved[k_1]", also=["in the list it names"])


def test_fixed_while_plan_passes():
    fixed = (OLD_WHILE.replace("_buf0, = ", "_buf0, _buf1 = ")
             .replace("h, out=_buf0)", "h, out=_buf1)")
             .replace("(_buf0,))", "(_buf0, _buf1))")
             .replace("        np.empty((300, 300), dtype=np.float64),\n",
                      "        np.empty((300, 300), dtype=np.float64),\n" * 2))
    verify_plan(fixed)


OLD_RETURN = '''\
_grad_g_buffers = []  # grad_g's work arrays: one set per concurrent call


def _new_grad_g_buffers():
    return (
        np.empty((300, 300), dtype=np.float64),
    )


def grad_g(h):
    _buf0, = _grad_g_buffers.pop() if _grad_g_buffers else _new_grad_g_buffers()
    k = 0
    hs = []
    while np.abs(h).max() > 0.5:
        h = np.tanh(h * 1.1)
        k = k + 1
        hs.append(h)
    # grad of: return np.sum(h * h)
    dh_3 = np.multiply(2.0, h, out=_buf0)
    # grad of: while np.max(np.abs(h)) > 0.5:
    dh_1 = dh_3
    for k_1 in reversed(range(k)):
        h_2 = hs[k_1]
        dh_1 = dh_1 * (1 - h_2 * h_2) * 1.1
    _grad_g_buffers.append((_buf0,))
    return dh_1
'''


def test_old_returned_buffer_is_rejected():
    msg = _rejects(OLD_RETURN, "return dh_1")
    assert "returns pool buffer _buf0 (held by `dh_1`)" in msg, msg


@pytest.mark.parametrize("fix", [
    ("dh_3 = np.multiply(2.0, h, out=_buf0)", "dh_3 = 2.0 * h"),   # today's: not planned
    ("return dh_1", "return dh_1.copy()"),
])
def test_fixed_returned_buffer_passes(fix):
    verify_plan(OLD_RETURN.replace(*fix))


# ---- today's compiled reproducers ----------------------------------------------------------

def while_saved(x):
    h = np.sin(x)
    k = 0
    while k < 3:
        h = np.tanh(h * 1.1)
        k += 1
    return np.sum(h * h)


def while_returned(h):
    while np.max(np.abs(h)) > 0.5:
        h = np.tanh(h * 1.1) * 0.9
    return np.sum(h * h)


@pytest.mark.parametrize("n", [64, 256])
def test_todays_plan_of_the_reproducer_passes(n):
    g = ad.grad(reproducer)
    x = np.random.default_rng(0).random((n, n))
    g(x)
    assert "out=_buf" in g.source and "cs[i]" in g.source  # a planned one, with a stack
    verify_plan(g.source)


@pytest.mark.parametrize("f", [while_saved, while_returned])
def test_todays_plans_of_the_while_loops_pass(f):
    g = ad.grad(f)
    g(np.random.default_rng(1).random((300, 300)))
    verify_plan(g.source)


def test_the_suite_checks_every_compiled_plan(monkeypatch):
    """conftest turns the hook on; the pipeline then checks each emitted source."""
    assert os.environ.get("ADCOMPILER_VERIFY_PLANS") == "1"
    seen = []
    monkeypatch.setattr(checker, "verify_plan", seen.append)

    def f(x):
        return np.sum(np.sin(x) * 3.0)

    g = ad.grad(f)
    g(np.ones(7))
    assert seen == [g.source]


def test_hook_rejects_before_loading(monkeypatch):
    def refuse(source):
        raise PlanError("refused")

    monkeypatch.setattr(checker, "verify_plan", refuse)

    def f2(x):
        return np.sum(np.cos(x) * 2.0)

    with pytest.raises(Exception, match="refused"):
        ad.grad(f2)(np.ones(5))


# ---- rule 1: a write into a buffer another live name holds -----------------------------------

def test_out_write_while_another_name_reads_the_buffer():
    src = _fn("""
        a = np.sin(x, out=_buf0)
        b = np.cos(x, out=_buf0)
        return float((a * b).sum())
    """)
    _rejects(src, "b = np.cos(x, out=_buf0)", "a", "return float((a * b).sum())")


def test_dead_holder_and_elementwise_in_place_pass():
    verify_plan(_fn("""
        a = np.sin(x, out=_buf0)
        y = float(a.sum())
        np.cos(x, out=_buf0)
        np.add(y, _buf0, out=_buf0)
        np.multiply(_buf0, _buf0, out=_buf0)
        return float(_buf0.sum())
    """))


def test_a_read_inside_the_write_is_still_a_conflict_when_read_again():
    src = _fn("""
        a = np.sin(x, out=_buf0)
        np.add(a, 1.0, out=_buf0)
        return float((a * 2).sum())
    """)
    _rejects(src, "np.add(a, 1.0, out=_buf0)", "a", "return float((a * 2).sum())")


def test_the_rebound_name_is_not_a_conflict():
    verify_plan(_fn("""
        a = np.sin(x, out=_buf0)
        a = np.tanh(a, out=_buf0)
        return float(a.sum())
    """))


def test_augmented_assignment_into_a_shared_buffer():
    src = _fn("""
        a = np.sin(x, out=_buf0)
        b = a
        b += 1.0
        return float((a + b).sum())
    """)
    _rejects(src, "b += 1.0", "a", "return float((a + b).sum())")
    verify_plan(_fn("""
        a = np.sin(x, out=_buf0)
        a += 1.0
        return float(a.sum())
    """))


def test_subscript_store_into_a_buffer_a_view_still_reads():
    src = _fn("""
        a = np.sin(x, out=_buf0)
        v = a[0]
        a[1:] = 0.0
        return float(v.sum())
    """)
    _rejects(src, "a[1:] = 0.0", "v", "return float(v.sum())")


def test_pool_name_read_after_its_out_is_that_value():
    """``out=_buf1`` defines ``_buf1``; ``dx = _buf0 * _buf1`` reads the chain's values."""
    verify_plan(_fn("""
        d = np.sin(x, out=_buf0)
        np.cos(x, out=_buf1)
        np.multiply(d, 0.5, out=_buf0)
        dx = _buf0 * _buf1
        return dx
    """))
    src = _fn("""
        np.cos(x, out=_buf1)
        keep = _buf1[:]
        np.sin(x, out=_buf1)
        return float((keep * _buf1).sum())
    """)
    _rejects(src, "np.sin(x, out=_buf1)", "keep", "return float((keep * _buf1).sum())")


@pytest.mark.parametrize("view", [
    "a.T", "a[::2]", "a.reshape(-1)", "a.transpose()", "np.reshape(a, (-1,))",
    "np.transpose(a)", "np.asarray(a)", "np.broadcast_to(a, (3, 4, 4))", "np.expand_dims(a, 0)",
    "np.squeeze(a)", "np.ravel(a)", "a.ravel()", "np.diagonal(a)", "a if p else x",
    "unknown_helper(a)", "(a, 1)[0]", "[a][0]",
])
def test_views_and_unknown_calls_keep_the_buffer(view):
    src = _fn(f"""
        a = np.sin(x, out=_buf0)
        v = {view}
        np.cos(x, out=_buf0)
        return float(np.sum(v))
    """, params="x, p")
    _rejects(src, "np.cos(x, out=_buf0)", "v", "return float(np.sum(v))")


@pytest.mark.parametrize("fresh", [
    "a.copy()", "np.copy(a)", "np.array(a)", "a * 2.0", "np.exp(a)", "np.zeros_like(a)",
    "float(a.sum())", "a.sum(axis=0)", "math.exp(float(a[0, 0]))", "-a", "a > 0",
    "np.where(a > 0, a, 0.0)", "_sum_to(a, (1, 4))",
])
def test_fresh_results_hold_nothing(fresh):
    verify_plan(_fn(f"""
        a = np.sin(x, out=_buf0)
        v = {fresh}
        np.cos(x, out=_buf0)
        return float(np.sum(v * _buf0))
    """))


def test_numexpr_reads_the_names_in_its_string():
    src = _fn("""
        t1 = _threaded(np.tanh, x, out=_buf0)
        _threaded(np.negative, x, out=_buf0)
        dx = ne.evaluate('t1 + x * (7 - t1 ** 2) + _buf0')
        return dx
    """)
    _rejects(src, "_threaded(np.negative, x, out=_buf0)", "t1",
             "dx = ne.evaluate('t1 + x * (7 - t1 ** 2) + _buf0')")
    verify_plan(_fn("""
        t1 = _threaded(np.tanh, x, out=_buf0)
        _threaded(np.negative, x, out=_buf1)
        _threaded(np.exp, _buf1, out=_buf1)
        dx = ne.evaluate('t1 + x * (7 - t1 ** 2) + _buf1')
        return dx
    """))


def test_numexpr_out_is_a_write():
    src = _fn("""
        t1 = np.tanh(x, out=_buf0)
        y = ne.evaluate('x * 2', out=_buf0)
        return float((t1 + y).sum())
    """)
    _rejects(src, "y = ne.evaluate('x * 2', out=_buf0)", "t1")


def test_give_back_is_not_a_read():
    """A stack's rows are written while the pool name still names the whole buffer: the
    give-back at the end does not make ``_buf1`` live."""
    verify_plan(_fn("""
        cs = _buf1
        c = x
        for i in range(3):
            c = np.tanh(c, out=cs[i])
        s = 0.0
        for k in reversed(range(3)):
            s = s + float(cs[k].sum())
        _grad_f_buffers.append((_buf0, _buf1))
        return s
    """))


# ---- stacks: row writes -----------------------------------------------------------------------

STACK = """
    cs = _buf1
    c = np.sin(x, out=_buf0)
    for i in range(3):
        c_prev = c
        c = np.tanh(c * 0.9, out=cs[i])
        d = c_prev * c
    dc = np.zeros_like(c)
    for k in reversed(range(3)):
        c_2 = cs[k]
        dc = dc * (1 - c_2 * c_2)
    {late}
    _grad_f_buffers.append((_buf0, _buf1))
    return float(dc.sum())
"""


def test_row_writes_do_not_conflict_with_other_rows():
    """``c_prev`` holds the previous row, read after the next row is written."""
    verify_plan(_fn(STACK.format(late="pass")))


def test_row_store_into_a_stack_passes():
    verify_plan(_fn("""
        hs = _buf1
        h = x
        for t in range(3):
            h = np.tanh(h)
            hs[t] = h
            hs[t] += 1.0
        return float(hs[2].sum())
    """))


def test_whole_write_into_a_stack_conflicts_with_its_rows():
    src = _fn(STACK.format(late="pass").replace(
        "    dc = np.zeros_like(c)", "    dc = np.zeros_like(c)\n    np.exp(x, out=_buf1)"))
    _rejects(src, "np.exp(x, out=_buf1)", "cs", "c_2 = cs[k]")


def test_row_write_conflicts_with_a_whole_value_of_the_buffer():
    src = _fn("""
        t = np.sin(x, out=_buf1)
        cs = _buf1
        c = x
        for i in range(3):
            c = np.tanh(c, out=cs[i])
        return float((t * c).sum())
    """)
    msg = _rejects(src, "c = np.tanh(c, out=cs[i])", "t", "return float((t * c).sum())")
    assert "a row of stack `cs` in pool buffer _buf1" in msg


def test_row_write_conflicts_with_the_rows_of_another_stack_in_the_buffer():
    src = _fn("""
        cs = _buf1
        c = x
        for i in range(3):
            c = np.tanh(c, out=cs[i])
        last = cs[2]
        ds = _buf1
        for j in range(3):
            c = np.sin(c, out=ds[j])
        return float((last * c).sum())
    """)
    _rejects(src, "c = np.sin(c, out=ds[j])", "last", "return float((last * c).sum())",
             also=["a row of it"])


def test_in_place_update_of_a_row_conflicts_with_the_stack():
    src = _fn(STACK.format(late="pass").replace(
        "        c_2 = cs[k]\n", "        c_2 = cs[k]\n        c_2 += 1.0\n"))
    _rejects(src, "c_2 += 1.0", "cs", "c_2 = cs[k]")


def test_limit_rows_of_one_stack_are_not_told_apart():
    """A limit: refilling a stack from the same line (an outer loop) while a name holds a row
    of the earlier fill is not seen."""
    verify_plan(_fn("""
        keep = x
        for outer in range(2):
            cs = _buf1
            c = x
            for i in range(3):
                c = np.tanh(c, out=cs[i])
            y = keep * 2.0
            keep = cs[0]
        return float(y.sum())
    """))


# ---- lists -----------------------------------------------------------------------------------

def test_a_list_keeps_the_buffer_it_was_given():
    src = _fn("""
        h = np.sin(x, out=_buf0)
        saved = []
        saved.append(h)
        np.cos(x, out=_buf0)
        last = saved.pop()
        return float((last * _buf0).sum())
    """)
    _rejects(src, "np.cos(x, out=_buf0)", "saved", "last = saved.pop()")


def test_a_list_of_copies_holds_no_buffer():
    verify_plan(_fn("""
        h = np.sin(x, out=_buf0)
        saved = []
        saved.append(h.copy())
        np.cos(x, out=_buf0)
        return float((saved[0] * _buf0).sum())
    """))


def test_a_list_in_a_list_and_an_item_store():
    src = _fn("""
        h = np.sin(x, out=_buf0)
        inner = [x]
        inner[0] = h
        outer = [inner]
        np.cos(x, out=_buf0)
        return float(outer[0][0].sum())
    """)
    _rejects(src, "np.cos(x, out=_buf0)", "outer", "return float(outer[0][0].sum())")


# ---- control flow ----------------------------------------------------------------------------

def test_a_branch_that_may_alias():
    src = _fn("""
        a = np.sin(x, out=_buf0)
        if p:
            b = a
        else:
            b = np.zeros_like(a)
        np.cos(x, out=_buf0)
        return float((b * _buf0).sum())
    """, params="x, p")
    _rejects(src, "np.cos(x, out=_buf0)", "b", "return float((b * _buf0).sum())")


def test_a_read_in_the_sibling_branch_is_not_after_the_write():
    verify_plan(_fn("""
        a = np.sin(x, out=_buf0)
        if p:
            np.cos(x, out=_buf0)
            y = _buf0 * 2.0
        else:
            y = a * 2.0
        return float(y.sum())
    """, params="x, p"))


def test_nested_loops_read_again_in_the_next_outer_iteration():
    src = _fn("""
        a = np.sin(x, out=_buf0)
        y = x
        for i in range(3):
            for j in range(2):
                y = y + a
            np.cos(x, out=_buf0)
            y = y * _buf0
        return float(y.sum())
    """)
    _rejects(src, "np.cos(x, out=_buf0)", "a", "y = y + a")


def test_break_leads_to_the_reads_after_the_loop():
    src = _fn("""
        a = np.sin(x, out=_buf0)
        k = 0
        while True:
            k = k + 1
            if k > n:
                break
            np.cos(x, out=_buf0)
            x = x * _buf0
        return float((a * x).sum())
    """, params="x, n")
    _rejects(src, "np.cos(x, out=_buf0)", "a", "return float((a * x).sum())")


@pytest.mark.parametrize("head, rejected", [("while True:", False), ("while k < 3:", True)])
def test_only_a_loop_that_can_end_leaves_from_its_header(head, rejected):
    src = _fn(f"""
        k = 0
        {head}
            k = k + 1
            h = np.sin(x, out=_buf0)
            if float(h.sum()) > 1.0:
                break
            np.cos(x, out=_buf0)
            x = x * _buf0
        return float(h.sum())
    """)
    if rejected:
        _rejects(src, "np.cos(x, out=_buf0)", "h", "return float(h.sum())")
    else:
        verify_plan(src)


def test_continue_goes_back_to_the_header():
    src = _fn("""
        a = np.sin(x, out=_buf0)
        y = x
        for i in range(3):
            y = y + a
            if i == 1:
                np.cos(x, out=_buf0)
                continue
            y = y * 2.0
        return float(y.sum())
    """)
    _rejects(src, "np.cos(x, out=_buf0)", "a", "y = y + a")


def test_with_block_is_checked():
    body = OLD_ALIAS.split("def grad_f(x):\n")[1]
    src = OLD_ALIAS.split("def grad_f(x):\n")[0] + "def grad_f(x):\n" + \
        "    with np.errstate(all='ignore'):\n" + textwrap.indent(body, "    ")
    _rejects(src, "np.cos(x, out=_buf1)", "dacc_1", "np.multiply(dacc_1, 0.5, out=_buf0)")


# ---- rules 2 and 3: returns, parameters, constants -------------------------------------------

@pytest.mark.parametrize("ret", [
    "return np.sin(x, out=_buf0)", "return a", "return a, 1.0", "return [a]", "return a.T",
])
def test_returning_a_pool_buffer(ret):
    src = _fn(f"""
        a = np.sin(x, out=_buf0)
        {ret}
    """)
    msg = _rejects(src, ret)
    assert "returns pool buffer _buf0" in msg


@pytest.mark.parametrize("write", [
    "x += 1.0", "x[0] = 1.0", "x[0] += 1.0", "np.exp(x, out=x)", "np.add.at(x, [0, 0], 1.0)",
    "np.copyto(x, 0.0)", "x.fill(0.0)", "xt = x.T\nxt[0] = 1.0",
    "v = np.asarray(x)\nnp.multiply(v, 2.0, out=v[0])",
])
def test_writing_into_a_parameter(write):
    lines = write.split("\n")
    src = _fn("\n".join(lines) + "\nreturn float(x.sum())", buffers=1)
    msg = _rejects(src, lines[-1])
    assert "writes into parameter x's array (the caller's data)" in msg


@pytest.mark.parametrize("safe", [
    "y = np.array(x)\ny[0] = 1.0", "x = x * 2.0\nx += 1.0", "y = x.copy()\ny += 1.0",
    "y = np.exp(x, out=_buf0)", "y = np.zeros_like(x)\nnp.add.at(y, [0], 1.0)",
])
def test_copies_of_parameters_may_be_written(safe):
    verify_plan(_fn(safe + "\ny = 1.0\nreturn float(x.sum())", buffers=1))


def test_writing_into_a_constant():
    src = _fn("""
        W[0] += x[0]
        return float(W.sum())
    """, buffers=1)
    msg = _rejects(src, "W[0] += x[0]")
    assert "W, a module-level array the code reads as a constant" in msg


def test_helpers_and_decorated_kernels():
    """A module helper whose result holds its argument is followed; a numba kernel (which
    fills its output parameter by design) is not checked."""
    src = '''\
def _view_of(a):
    return a.T


@numba.njit
def _kernel(x, out):
    out[0] = x[0]


def grad_f(x):
    _buf0, = _grad_f_buffers.pop() if _grad_f_buffers else _new_grad_f_buffers()
    a = np.sin(x, out=_buf0)
    v = _view_of(a)
    np.cos(x, out=_buf0)
    return float((v * _buf0).sum())
'''
    _rejects(src, "np.cos(x, out=_buf0)", "v", "return float((v * _buf0).sum())")
    verify_plan(src.replace("return a.T", "return a.copy()"))


def test_plan_error_is_an_assertion_error():
    assert issubclass(PlanError, AssertionError)
    verify_plan("x = 1\n")  # no function: nothing to check


def test_poison_writes_its_buffers_and_reads_none():
    """Poisoned code's ``_poison(_buf1)`` fills a released buffer: a write, not a read (the
    stack's rows written before it stay fine), and a conflict where a live name still holds
    the buffer."""
    head = "from adcompiler.runtime.poison import poison as _poison\n\n\n"
    verify_plan(head + _fn("""
        _poison(_buf0, _buf1)
        cs = _buf1
        c = x
        for i in range(2):
            c = np.tanh(c, out=cs[i])
        s = 0.0
        for k in reversed(range(2)):
            s = s + float(cs[k].sum())
        _poison(_buf1)
        d = np.sin(x, out=_buf0)
        y = d * 2.0
        _poison(_buf0)
        _poison(_buf0, _buf1)
        _grad_f_buffers.append((_buf0, _buf1))
        return float(y.sum()) + s
    """))
    src = head + _fn("""
        d = np.sin(x, out=_buf0)
        _poison(_buf0)
        return float(d.sum())
    """)
    _rejects(src, "_poison(_buf0)", "d", "return float(d.sum())")


def test_cupy_kernels_return_new_arrays():
    """``_k0 = cp.ElementwiseKernel(...)`` at module level: its calls' results are arrays of
    their own, which the code may update in place (an unknown call might return ``y``)."""
    src = '''\
_k0 = cp.ElementwiseKernel(
    "float64 x0, float64 x1", "float64 out",
    "out = x0 * x1;",
    "grad_f_k0")


def grad_f(x, y):
    dv = _k0(x, y)
    dv[1:] += 1.0
    return dv
'''
    verify_plan(src)
    msg = _rejects(src.replace("dv = _k0(x, y)", "dv = unknown(x, y)"), "dv[1:] += 1.0")
    assert "parameter x's array" in msg


# ---- reads of values never written, steps nobody reads ------------------------------------------

def test_a_pool_name_read_before_anything_is_written_into_it():
    src = _fn("""
        if p:
            np.cos(x, out=_buf0)
        dx = _buf0 * 2.0
        return dx
    """, params="x, p")
    with pytest.raises(PlanError) as err:
        verify_plan(src)
    line = _line(src, "dx = _buf0 * 2.0")
    assert str(err.value).startswith(
        f"line {line}: `dx = _buf0 * 2.0` reads pool buffer _buf0 before this call writes "
        f"anything into it (taken at line 5), on some path"), str(err.value)


def test_a_chain_step_nobody_reads():
    """A step written into another buffer than the one the next step reads: the next step
    reads an older value (here ``t3``'s), and the step's own value is lost."""
    src = _fn("""
        t3 = np.exp(x, out=_buf1)
        y = t3 * 2.0
        np.cos(x, out=_buf0)
        np.multiply(x, _buf1, out=_buf1)
        return float((y * _buf1).sum())
    """)
    with pytest.raises(PlanError, match=r"line 8: `np.cos\(x, out=_buf0\)` computes into "
                       r"pool buffer _buf0 a value no name reads afterwards"):
        verify_plan(src)
    verify_plan(src.replace("np.cos(x, out=_buf0)", "np.cos(x, out=_buf1)"))


def test_a_read_after_a_poison_is_a_conflict_even_through_the_pool_name():
    head = "from adcompiler.runtime.poison import poison as _poison\n\n\n"
    src = head + _fn("""
        c = np.cos(x, out=_buf0)
        y = c * 2.0
        _poison(_buf0)
        return float((y + _buf0).sum())
    """)
    _rejects(src, "_poison(_buf0)", "_buf0", "return float((y + _buf0).sum())")


@pytest.mark.parametrize("loop, rejected", [
    ("for i in range(3):", False), ("for i in reversed(range(1, 4)):", False),
    ("for i in range(n):", True), ("for i in range(0):", True)])
def test_a_constant_range_runs_its_body(loop, rejected):
    """After ``for i in range(3)`` the slot holds what the body made, not its entry value:
    only a loop that may run no iteration leaves ``d`` holding ``_buf0``."""
    src = _fn(f"""
        d = np.sin(x, out=_buf0)
        {loop}
            d = d * 2.0
        np.cos(x, out=_buf0)
        return float((d * _buf0).sum())
    """, params="x, n")
    if rejected:
        _rejects(src, "np.cos(x, out=_buf0)", "d", "return float((d * _buf0).sum())")
    else:
        verify_plan(src)


# ---- mutations of real plans: each one that changes the gradient is rejected ------------------

def rnn(x, w):
    h = np.tanh(x[0])
    for t in range(1, 4):
        h = np.tanh(x[t] * w + h * 0.5)
    return np.sum(h * h)


def layers(x, w):
    a = np.tanh(x * w)
    b = np.sin(a) * a
    c = np.exp(-b * b) + a
    return np.sum(c * b)


def _run(source, fname, constants, args):
    """The gradient the module ``source`` computes, called twice (the second call takes the
    buffers the first gave back)."""
    scope = {"np": np, "math": math, **constants}
    exec(compile(source, "<mutated>", "exec"), scope)
    results = []
    for _ in range(2):
        with np.errstate(all="ignore"):
            out = scope[fname](*[np.array(a) for a in args])
        results.append(np.array(out, copy=True))
    return results


def _mutations(source):
    """Each plan with one use of a buffer name (a read, an ``out=``, a stack's start) turned
    into another buffer of the same shape."""
    shapes = re.findall(r"np\.empty\((\([^)]*\)), dtype=np\.(\w+)\)", source)
    for m in re.finditer(r"\b_buf(\d+)\b", source):
        line = source[source.rfind("\n", 0, m.start()) + 1:source.find("\n", m.start())]
        if "_buffers.append" in line or "_buffers.pop()" in line:
            continue
        k = int(m.group(1))
        for j, shape in enumerate(shapes):
            if j != k and shape == shapes[k]:
                yield source[:m.start()] + f"_buf{j}" + source[m.end():]


@pytest.mark.parametrize("f, args", [
    (reproducer, (np.random.default_rng(2).standard_normal((70, 70)),)),
    (while_saved, (np.random.default_rng(3).standard_normal((70, 70)),)),
    (rnn, (np.random.default_rng(4).standard_normal((4, 70, 70)), 0.3)),
    (layers, (np.random.default_rng(5).standard_normal((70, 70)), 0.7)),
    (branch_result, (np.random.default_rng(6).standard_normal((70, 70)),)),
    (branch_result, (-np.abs(np.random.default_rng(6).standard_normal((70, 70))),)),
])
def test_every_mutation_that_changes_the_gradient_is_rejected(f, args):
    g = ad.grad(f)
    g(*args)
    fname = "grad_" + f.__name__
    verify_plan(g.source)
    right = _run(g.source, fname, g.constants, args)
    changed = 0
    for mutated in _mutations(g.source):
        got = _run(mutated, fname, g.constants, args)
        if all(np.allclose(a, b, rtol=1e-12, atol=1e-14) for a in got for b in right[:1]):
            continue  # the same gradient: the checker may pass it or not
        changed += 1
        with pytest.raises(PlanError):
            verify_plan(mutated)
    assert changed > 0


def test_a_list_extended_in_place_keeps_the_buffer():
    src = _fn("""
        h = np.sin(x, out=_buf0)
        saved = []
        saved += [h]
        np.cos(x, out=_buf0)
        return float((saved[0] * _buf0).sum())
    """)
    _rejects(src, "np.cos(x, out=_buf0)", "saved", "return float((saved[0] * _buf0).sum())")


# ---- entries copied out of a buffer; tests computed once (found by the large campaign) -------

def _module(body, shapes):
    """``_fn`` with the pool's maker, so the checker knows each buffer's number of axes."""
    arrays = "".join(f"\n        np.empty({s!r}, dtype=np.float64)," for s in shapes)
    maker = f"def _new_grad_f_buffers():\n    return ({arrays}\n    )\n\n\n"
    source = _fn(body, buffers=len(shapes))
    return source.replace("_grad_f_buffers = []\n\n\n", "_grad_f_buffers = []\n\n\n" + maker)


ENTRIES = """
    v = np.multiply(x, 2.0, out=_buf0)
    ts = []
    for k in range(3):
        t = v[{index}]
        ts.append(t)
    w = np.cos(x, out=_buf0)
    return float(np.sum(ts)) + float(w.sum())
"""


@pytest.mark.parametrize("index", ["k", "k + 1", "[k, 0]"])
def test_an_entry_of_a_1d_buffer_is_a_copy_the_list_keeps(index):
    """``v[k]`` of a 1-D buffer (a number, or a gather by an index array) holds no part of
    it: the buffer may be written while the list of entries is read."""
    verify_plan(_module(ENTRIES.format(index=index), [(4096,)]))


@pytest.mark.parametrize("index, shape", [("k", (64, 64)), ("k:", (4096,)), ("..., k", (4096,)),
                                          ("None", (4096,))])
def test_a_view_into_a_buffer_the_list_keeps_is_still_a_conflict(index, shape):
    """A row of a 2-D buffer, a slice, ``...`` or a new axis is a view of it."""
    _rejects(_module(ENTRIES.format(index=index), [shape]), "w = np.cos(x, out=_buf0)", "ts")


CORRELATED = """
    t = np.sum(x) > 0.0
    v = np.multiply(x, 2.0, out=_buf0)
    if t:
        v = np.tanh(v)
    else:
        u = v > 1.0
    w = np.cos(x, out=_buf0)
    if {test}:
        return float((v * w).sum())
    return float(w.sum())
"""


def test_a_test_computed_once_takes_the_same_branch_twice():
    """Where ``t`` holds, ``v`` is ``tanh``'s new array; where it does not, the buffer, which
    the second ``if t:`` never reads: no conflict on any run."""
    verify_plan(_module(CORRELATED.format(test="t"), [(4096,)]))


def test_the_other_branch_of_a_test_computed_once_is_a_conflict():
    _rejects(_module(CORRELATED.format(test="not t"), [(4096,)]), "w = np.cos(x, out=_buf0)", "v")


def test_a_test_rebound_in_a_loop_is_taken_either_way():
    src = _module(CORRELATED.format(test="t").replace(
        "    w = np.cos(x, out=_buf0)\n", "    w = np.cos(x, out=_buf0)\n    for k in range(2):\n"
        "        t = k > 0\n"), [(4096,)])
    _rejects(src, "w = np.cos(x, out=_buf0)", "v")
