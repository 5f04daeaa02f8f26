"""MkDocs hooks: the supported-NumPy tables are generated from the code at build time.

A page holding ``<!-- table: NAME -->`` gets the table ``docs/gen_tables.py`` makes for NAME
(``primitives``, ``functions``, ``methods``, ``tape_functions``); an unknown NAME fails the
build.

``<!-- docstring: adcompiler.grad -->`` renders a function's signature and docstring as the
running code has them: ``grad``, ``value_and_grad`` and ``vjp`` are made by a factory
(``_transform``), and mkdocstrings, which reads the source, cannot resolve a function defined
inside another. Every other reference entry is mkdocstrings' ``::: name``.
"""

import importlib.util
import os
import re

_MARKER = re.compile(r"<!-- table: ([a-z_]+) -->")
_DOCSTRING = re.compile(r"<!-- docstring: ([\w.]+) -->")
_HERE = os.path.dirname(os.path.abspath(__file__))


def _tables():
    spec = importlib.util.spec_from_file_location("adcompiler_docs_tables",
                                                  os.path.join(_HERE, "gen_tables.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.TABLES


def _docstring(match):
    import importlib
    import inspect
    path = match.group(1)
    module, _, name = path.rpartition(".")
    fn = getattr(importlib.import_module(module), name)
    doc = inspect.cleandoc(fn.__doc__ or "")
    if not doc:
        raise ValueError(f"{path} has no docstring")
    doc = re.sub(r":\w+:`([^`]+)`", r"`\1`", doc).replace("``", "`")
    return (f"## `{path}`\n\n```python\n{path}{inspect.signature(fn)}\n```\n\n"
            f"{doc}\n")


def on_page_markdown(markdown, page, config, files):
    markdown = _DOCSTRING.sub(_docstring, markdown)
    if not _MARKER.search(markdown):
        return markdown
    tables = _tables()

    def table(match):
        name = match.group(1)
        if name not in tables:
            raise ValueError(f"{page.file.src_path}: no generated table named {name!r} "
                             f"(docs/gen_tables.py has {sorted(tables)})")
        return tables[name]()

    return _MARKER.sub(table, markdown)
