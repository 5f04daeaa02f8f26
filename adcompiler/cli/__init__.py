"""The ``adcompiler`` command line: its commands, their inputs and outputs, and what ``show`` and ``draw`` print."""

from .main import main
