"""adcompiler's release number: read by the package (``adcompiler.__version__``), by the
compile cache's fingerprint and by pyproject.toml, from this one place."""

__version__ = "0.1.0"
