"""The tags of the shift-invariance analysis (:mod:`.shift_invariance`), shared with its rules
for primitives that move axes (:mod:`.shift_layouts`): both import them from here, so the
dependency runs one way (shift_invariance -> shift_layouts -> shift_tags).

A value's tag says how it depends on the perturbation ``c`` of a max: None (untracked, it
does not), ``("shift", k, emb)``, ``("scale", k, emb)``, or :data:`OTHER` (anything else). A
rule raises :class:`Unknown` where the result depends on ``c`` in a way not tracked; the
result is then OTHER.
"""

OTHER = ("other",)


class Unknown(Exception):
    """A node the analysis has no exact rule for: its result is OTHER."""
