"""What the derivative rules recognise in the forward graph they differentiate, where a rule
applied alone would compute a sum of cancelling terms.

- :mod:`.shift_invariance` (with :mod:`.shift_layouts`, :mod:`.shift_tags`): the max subtracted
  for stability in a softmax or logsumexp, whose cotangent is exactly zero;
- :mod:`.logaddexp`: the stable log-add-exp idiom (softplus), whose derivative is one sigmoid;
- :mod:`.normalisation`: ``x / sum(x, axis, keepdims=True)`` (softmax), whose adjoint is
  ``(g - sum(g * q)) / y`` through the numerator alone;
- :mod:`.forward_uses`: who reads each value of the graph under construction, which both ask.

Invariant: each answers only for the compiler's Builder (a graph to look at); on the tape's
arrays and SymPy symbols it answers "no", and the rule keeps its general form.
"""
