"""The public transforms and what runs when they are called: compiling per signature, the fast path, the state a gradient read, higher order."""

from .gradients import GradientFunction, grad, jvp, value_and_grad, vjp
from .higher import hessian, jacobian
