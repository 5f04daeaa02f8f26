"""Registers the tape's ``np.average``, ``nansum``, ``nanmean``, ``nanmax``/``nanmin``
(:mod:`.statistics`) and ``np.polyval``, ``convolve``, ``interp`` (:mod:`.signals`) for
:mod:`.methods`, which imports this name; ``np.take``/``pad`` are in :mod:`.splits`,
``np.cross`` in :mod:`.products`. Nothing else belongs here: once methods.py imports
``signals`` and ``statistics`` itself, this module goes.
"""

from . import signals, statistics  # noqa: F401 (they register on import)
