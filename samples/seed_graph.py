"""The first seed's worked example: loss = mean((inp*w1 + w2) * (inp*w1*w3)).

    adcompiler show samples/seed_graph.py:loss
"""

import numpy as np

import adcompiler as ad


@ad.grad(wrt=("w1", "w2", "w3"))
def loss(w1, w2, w3, inp):
    l1 = inp * w1
    l2 = l1 + w2
    l3 = l1 * w3
    l4 = l2 * l3
    return l4.mean()


def example_loss():
    return 2.0, 3.0, 4.0, np.ones((2, 2))


if __name__ == "__main__":
    print(loss(*example_loss()))  # (28.0, 8.0, 10.0)
