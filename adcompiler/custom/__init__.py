"""Custom rules: ``@custom_vjp`` functions, what the compiler learns from their rules, and the arguments those are checked on."""

from .vjp import custom_vjp, stop_gradient
