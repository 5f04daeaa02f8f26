"""Graph-to-graph optimisation passes, run in the order of :data:`PIPELINE`.

Each pass is a function ``Graph -> Graph`` in its own module, named by a verb. Those that
descend into nested regions do it through one walker (:class:`.rewrite.Walker`); simplify's
rules share one protocol (:class:`.rewrite.Rewrite`) and run in the order of the tuple
:data:`.simplify.RULES`.
"""

from .algebra import simplify_fused_symbolically
from .batch import batch_loop_accumulations
from .broadcast_products import contract_broadcast_products
from .broadcasts import drop_implicit_broadcasts
from .carry import copy_updated_carries
from .cholesky_inverses import invert_cholesky_adjoints
from .cse import eliminate_common_subexpressions
from .dce import eliminate_dead_code
from .factorizations import merge_factorizations
from .fuse import fuse_elementwise
from .head_layouts import transpose_head_products
from .hoist import hoist_loop_invariant_rows
from .inverses import reuse_inverses
from .logistic import expand_logistics
from .low_rank_products import expand_low_rank_products
from .triangular_solves import solve_with_factors
from .scales import hoist_scales
from .simplify import simplify
from .small_factors import gather_small_factors
from .traces import sum_diagonals

PIPELINE = (
    expand_logistics,                 # first, in plain code too: no later pass or backend
                                      # knows the sigmoids recognised before differentiation
    simplify,                         # folds literals and identities (x * 1, x ** 1): fewer nodes
    eliminate_common_subexpressions,  # after simplify, so that x * 1.0 and x meet as the same x
    simplify,                         # again: CSE makes a + a (the two halves of d(x*x)) meet
    hoist_scales,                     # after both: one node per expression and true reader
                                      # counts (what it materialises), c1 * (c2 * x) folded and
                                      # a + a already 2.0 * a; before DCE (a hoisted seed may
                                      # leave its operand's producer unread) and fusion (whose
                                      # chains it changes, and which needs the final readers)
    batch_loop_accumulations,         # after the simplifies (one add per accumulation), before
                                      # DCE (a batched row read may be left unread) and fusion
    hoist_loop_invariant_rows,        # after CSE (one x[t] row, one x[t] @ W) and the
                                      # simplifies (literals folded: the sums it matches are
                                      # final); independent of batching (adjoint sums, not
                                      # forward products); before DCE (a hoisted row's s[k]
                                      # and a stack of hoisted rows are left unread) and
                                      # fusion (whose chains it shortens)
    drop_implicit_broadcasts,         # after the simplifies (which fold a broadcast literal
                                      # into its reader), before DCE (the broadcasts it drops
                                      # are left unread) and fusion (whose chains it narrows)
    contract_broadcast_products,      # after the simplifies and CSE (one difference node, the
                                      # adjoint's scales folded: the forms it matches are
                                      # final) and the dropped broadcasts (G[:, :, None] read
                                      # as written); before DCE, which removes the (n, k, d)
                                      # cubes no rewritten sum reads, and fusion (which would
                                      # take the products into chains)
    eliminate_dead_code,              # the passes above leave unused nodes behind
    merge_factorizations,             # after DCE: only the results still read share a call
    reuse_inverses,                   # after CSE and DCE: one inv(K) and the solves it replaces
    solve_with_factors,               # after reuse_inverses (which takes solves with K.T):
                                      # the solves with a Cholesky factor left, triangular
    expand_low_rank_products,         # after DCE and the triangular solves (final readers; its
                                      # own leftovers it removes), before sum_diagonals (whose
                                      # diagonal products it takes inside sums) and fusion
    invert_cholesky_adjoints,         # after the low-rank products (which write the
                                      # Cholesky cotangent's outer products it reads), before
                                      # fusion (which would take its sum into a chain)
    sum_diagonals,                    # after DCE (true reader counts), before fusion (which
                                      # would take the product into a chain)
    transpose_head_products,          # after DCE (true readers: the merge's products),
                                      # before fusion (which counts the transposes it adds)
    gather_small_factors,             # after hoist_scales (scales placed) and DCE (true
                                      # reader counts: a tree's inner values read once),
                                      # before fusion (which would take the tree into a chain)
    copy_updated_carries,             # after DCE (the final loops and their readers): a loop
                                      # writing entries of a carried array it does not own
                                      # copies it once before, not every iteration
    fuse_elementwise,                 # it needs final use counts (a value read twice is
                                      # materialised), so after CSE and DCE
    simplify_fused_symbolically,      # SymPy on whole fused expressions: after fusion made them
    eliminate_dead_code,              # an input a simpler expression no longer reads (a seed of
                                      # ones) leaves its producer unused
)


def optimize(graph, plain=False, skip=()):
    """Run the pipeline; ``plain`` (code that will be transformed again) skips fusion and
    batching, which write forms the frontend does not read back, hoisting (see
    :mod:`.hoist`) and the merged factorizations (whose whole calls have no rules); the passes
    in ``skip`` are not run either (the numba backend keeps broadcast-then-reduce as loops)."""
    for run_pass in PIPELINE:
        if run_pass in skip:
            continue
        if plain and run_pass in (fuse_elementwise, batch_loop_accumulations,
                                  hoist_loop_invariant_rows, copy_updated_carries,
                                  merge_factorizations, reuse_inverses, sum_diagonals,
                                  expand_low_rank_products, invert_cholesky_adjoints,
                                  solve_with_factors, contract_broadcast_products,
                                  transpose_head_products, gather_small_factors):
            continue
        graph = run_pass(graph)
    return graph
