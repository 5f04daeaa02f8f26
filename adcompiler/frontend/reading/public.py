"""adcompiler's public objects by name, and the package itself under ``"adcompiler"``.

Filled by ``adcompiler/__init__.py`` once the API is defined. The frontend sits below the API:
where it must recognise adcompiler's own objects in a user's module (a decorator ``@ad.grad``,
``ad.stop_gradient`` in copied code), it looks them up here, by identity, instead of importing
the package above it. Invariant: after ``import adcompiler`` it holds every name of
``adcompiler.__all__``.
"""

PUBLIC: dict = {}
