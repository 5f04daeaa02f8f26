"""Expert hand-written NumPy gradients of the workloads: the practical floor for NumPy code.

Careful and vectorised (whole-array products, transposes as views, derivatives simplified by
hand, forward values reused), but ordinary NumPy: no ``out=`` buffers. Each takes the workload's
arguments and returns the gradients with respect to its ``wrt`` names, as a tuple.
"""

import math

import numpy as np


def seed_graph(w1, w2, w3, inp):
    l1 = inp * w1
    l2 = l1 + w2
    l3 = l1 * w3
    n = inp.size
    dw1 = float(np.sum((l3 + l2 * w3) * inp)) / n
    dw2 = float(np.sum(l3)) / n
    dw3 = float(np.sum(l2 * l1)) / n
    return dw1, dw2, dw3


def seed_f(x1, x2):
    return 1.0 / x1 + x2, x1 - math.cos(x2)


def elementwise(x):
    # d/dx [tanh(x) x + 3x^2 - exp(-x)] = x (1 - tanh^2) + tanh + 6x + exp(-x)
    t = np.tanh(x)
    g = 7.0 - t * t
    g *= x
    g += t
    g += np.exp(-x)
    return (g,)


def rosenbrock(x):
    a = x[:-1]
    r = x[1:] - a * a
    g = np.empty_like(x)
    g[0] = 0.0
    g[1:] = 200.0 * r
    g[:-1] += 2.0 * (a - 1.0) - 400.0 * (a * r)
    return (g,)


def logistic(w, X, y):
    s = 2.0 * y - 1.0
    # d/dm log1p(exp(-m)) = -1 / (1 + exp(m)), with m = s * (X @ w)
    dm = s / (1.0 + np.exp(s * (X @ w)))
    return (X.T @ (dm * (-1.0 / len(y))),)


def mlp(W1, b1, W2, b2, x, onehot):
    h = np.tanh(x @ W1 + b1)
    logits = h @ W2 + b2
    e = np.exp(logits - np.max(logits, axis=1, keepdims=True))
    # the rows of onehot sum to one, so d loss / d logits = (softmax - onehot) / batch
    dz = e / np.sum(e, axis=1, keepdims=True)
    dz -= onehot
    dz /= len(x)
    da = dz @ W2.T
    da *= 1.0 - h * h
    return x.T @ da, np.sum(da, axis=0), h.T @ dz, np.sum(dz, axis=0)


def rnn(Wh, Wx, b, x, h0):
    T, batch, d_in = x.shape
    inputs = (x.reshape(T * batch, d_in) @ Wx + b).reshape(T, batch, -1)
    hs = np.empty((T + 1,) + h0.shape)   # hs[t] is the state before step t
    hs[0] = h0
    for t in range(T):
        hs[t + 1] = np.tanh(hs[t] @ Wh + inputs[t])
    da = np.empty_like(inputs)           # d loss / d pre-activation, per step
    dh = 2.0 * hs[T]
    for t in range(T - 1, -1, -1):
        da[t] = dh * (1.0 - hs[t + 1] * hs[t + 1])
        dh = da[t] @ Wh.T
    flat = da.reshape(T * batch, -1)
    dWh = hs[:T].reshape(T * batch, -1).T @ flat
    dWx = x.reshape(T * batch, d_in).T @ flat
    return dWh, dWx, np.sum(flat, axis=0)


def small_mlp(W1, b1, W2, b2, x, y):
    h = np.tanh(x @ W1 + b1)
    derr = (h @ W2 + b2 - y) * (2.0 / y.size)
    da = (derr @ W2.T) * (1.0 - h * h)
    return x.T @ da, np.sum(da, axis=0), h.T @ derr, np.sum(derr, axis=0)


def gmm(mu, log_sigma, logit_w, X):
    n, d = X.shape
    inv_var = np.exp(-2.0 * log_sigma)
    # |x - mu_k|^2 expanded, so that the (n, k) distances are one product, not an (n, k, d) cube
    sq = np.sum(X * X, axis=1)[:, None] - 2.0 * (X @ mu.T) + np.sum(mu * mu, axis=1)
    w = np.exp(logit_w - np.max(logit_w))
    w /= np.sum(w)
    r = np.log(w) - d * log_sigma - 0.5 * sq * inv_var
    r = np.exp(r - np.max(r, axis=1, keepdims=True))
    r /= np.sum(r, axis=1, keepdims=True)      # responsibilities: d loss / d comp = -r / n
    nk = np.sum(r, axis=0)
    dmu = (inv_var / n)[:, None] * (nk[:, None] * mu - r.T @ X)
    dlog_sigma = (d * nk - np.sum(r * sq, axis=0) * inv_var) / n
    return dmu, dlog_sigma, w - nk / n


def _periodic_laplacian(u):
    """u[i-1] - 2 u[i] + u[i+1] with wrap-around, by slices (np.roll costs more calls)."""
    lap = np.empty_like(u)
    lap[1:-1] = u[:-2] + u[2:]
    lap[0] = u[-1] + u[1]
    lap[-1] = u[-2] + u[0]
    lap -= 2.0 * u
    return lap


def heat(u0, kappa, obs):
    T = obs.shape[0]
    us = np.empty((T + 1,) + u0.shape)         # us[t]: the state before step t
    laps = np.empty((T,) + u0.shape)
    us[0] = u0
    for t in range(T):
        laps[t] = _periodic_laplacian(us[t])
        us[t + 1] = us[t] + kappa * laps[t]
    lam = np.zeros_like(u0)                   # d loss / d u, carried backwards
    dkappa = np.zeros_like(kappa)
    for t in range(T - 1, -1, -1):
        lam += 2.0 * (us[t + 1] - obs[t])
        dkappa += lam * laps[t]
        lam = lam + _periodic_laplacian(kappa * lam)   # the periodic Laplacian is symmetric
    return lam, dkappa


def gp_nll(theta, X, y):
    n = X.shape[0]
    sq = np.sum(X * X, axis=1)
    d2 = sq[:, None] + sq[None, :] - 2.0 * (X @ X.T)
    inv_ell2 = np.exp(-2.0 * theta[0])
    noise = np.exp(2.0 * theta[2])
    Kse = np.exp(2.0 * theta[1] - 0.5 * d2 * inv_ell2)
    K = Kse.copy()
    K.flat[::n + 1] += noise
    Kinv = np.linalg.inv(K)
    alpha = Kinv @ y
    W = Kinv - np.outer(alpha, alpha)          # d nll / d K = W / 2
    WK = W * Kse
    return (np.array([0.5 * inv_ell2 * np.sum(WK * d2), np.sum(WK), noise * np.trace(W)]),)


def matfact(U, V, iu, iv, r):
    Ui, Vi = U[iu], V[iv]
    g = 2.0 * (np.sum(Ui * Vi, axis=1) - r)
    rank = U.shape[1]
    cols = np.arange(rank)
    # scatter-add of the rows by np.bincount on flat indices (about 4x np.add.at at 10^5 x 32)
    dU = np.bincount((iu[:, None] * rank + cols).ravel(), weights=(g[:, None] * Vi).ravel(),
                     minlength=U.size).reshape(U.shape)
    dV = np.bincount((iv[:, None] * rank + cols).ravel(), weights=(g[:, None] * Ui).ravel(),
                     minlength=V.size).reshape(V.shape)
    dU += 0.02 * U
    dV += 0.02 * V
    return dU, dV


def gru(Wz, Uz, bz, Wr, Ur, br, Wh, Uh, bh, x, h0):
    T, batch, d_in = x.shape
    flat = x.reshape(T * batch, d_in)
    xz = (flat @ Wz + bz).reshape(T, batch, -1)    # the input projections, all steps at once
    xr = (flat @ Wr + br).reshape(T, batch, -1)
    xh = (flat @ Wh + bh).reshape(T, batch, -1)
    hs = np.empty((T + 1,) + h0.shape)
    zs, rs, cs = np.empty_like(xz), np.empty_like(xz), np.empty_like(xz)
    hs[0] = h0
    for t in range(T):
        h = hs[t]
        zs[t] = 1.0 / (1.0 + np.exp(-(xz[t] + h @ Uz)))
        rs[t] = 1.0 / (1.0 + np.exp(-(xr[t] + h @ Ur)))
        cs[t] = np.tanh(xh[t] + (rs[t] * h) @ Uh)
        hs[t + 1] = h + zs[t] * (cs[t] - h)
    daz, dar, dac = np.empty_like(xz), np.empty_like(xz), np.empty_like(xz)
    dh = 2.0 * hs[T]
    for t in range(T - 1, -1, -1):
        h, z, r, c = hs[t], zs[t], rs[t], cs[t]
        dac[t] = dh * z * (1.0 - c * c)
        daz[t] = dh * (c - h) * z * (1.0 - z)
        drh = dac[t] @ Uh.T
        dar[t] = drh * h * r * (1.0 - r)
        dh = dh * (1.0 - z) + drh * r + daz[t] @ Uz.T + dar[t] @ Ur.T
    H = h0.shape[1]
    gz, gr, gc = daz.reshape(-1, H), dar.reshape(-1, H), dac.reshape(-1, H)
    hprev = hs[:T].reshape(-1, H)
    rh = (rs * hs[:T]).reshape(-1, H)
    return (flat.T @ gz, hprev.T @ gz, np.sum(gz, axis=0),
            flat.T @ gr, hprev.T @ gr, np.sum(gr, axis=0),
            flat.T @ gc, rh.T @ gc, np.sum(gc, axis=0))


def _layer_norm(x):
    xc = x - np.mean(x, axis=1, keepdims=True)
    return xc / np.sqrt(np.mean(xc * xc, axis=1, keepdims=True) + 1e-5)


def transformer(Wq, Wk, Wv, Wo, W1, b1, W2, b2, x, y):
    S, D = x.shape
    H = 4
    dh = D // H
    scale = dh ** -0.5

    def heads(m):                              # (S, D) -> (H, S, dh)
        return m.reshape(S, H, dh).transpose(1, 0, 2)

    a = _layer_norm(x)
    q, k, v = heads(a @ Wq), heads(a @ Wk), heads(a @ Wv)
    s = (q @ k.transpose(0, 2, 1)) * scale
    p = np.exp(s - np.max(s, axis=2, keepdims=True))
    p /= np.sum(p, axis=2, keepdims=True)
    att = (p @ v).transpose(1, 0, 2).reshape(S, D)
    h = x + att @ Wo
    xc2 = h - np.mean(h, axis=1, keepdims=True)
    inv2 = 1.0 / np.sqrt(np.mean(xc2 * xc2, axis=1, keepdims=True) + 1e-5)
    a2 = xc2 * inv2
    z1 = a2 @ W1 + b1
    m = np.maximum(z1, 0.0)
    out = h + m @ W2 + b2
    dout = (out - y) * (2.0 / out.size)
    dm = dout @ W2.T
    dz1 = dm * (z1 > 0.0)
    da2 = dz1 @ W1.T
    # layer norm without gain: d a2 -> d h
    dh_ = dout + inv2 * (da2 - np.mean(da2, axis=1, keepdims=True)
                         - a2 * np.mean(da2 * a2, axis=1, keepdims=True))
    datt = heads(dh_ @ Wo.T)
    dp = datt @ v.transpose(0, 2, 1)
    dv = p.transpose(0, 2, 1) @ datt
    ds = p * (dp - np.sum(dp * p, axis=2, keepdims=True))
    ds *= scale
    dq = ds @ k
    dk = ds.transpose(0, 2, 1) @ q

    def merge(m):                              # (H, S, dh) -> (S, D)
        return m.transpose(1, 0, 2).reshape(S, D)

    return (a.T @ merge(dq), a.T @ merge(dk), a.T @ merge(dv), att.T @ dh_,
            a2.T @ dz1, np.sum(dz1, axis=0), m.T @ dout, np.sum(dout, axis=0))


def ode_rk4(W1, b1, W2, y0, obs):
    dt = 0.05
    T = obs.shape[0]
    # each step's state and stage inputs, and the stages' tanh, in arrays made once (kept
    # temporaries would each be a fresh mmap of 128 KB: page faults on every step)
    ys = np.empty((T + 1, 4) + y0.shape)      # ys[t, 0]: the state before step t; 1-3: Y2-Y4
    acts = np.empty((T, 4, y0.shape[0], W1.shape[1]))
    ys[0, 0] = y0
    for t in range(T):
        y, Ys, a = ys[t, 0], ys[t], acts[t]
        a[0] = np.tanh(y @ W1 + b1)
        k1 = a[0] @ W2
        Ys[1] = y + (0.5 * dt) * k1
        a[1] = np.tanh(Ys[1] @ W1 + b1)
        k2 = a[1] @ W2
        Ys[2] = y + (0.5 * dt) * k2
        a[2] = np.tanh(Ys[2] @ W1 + b1)
        k3 = a[2] @ W2
        Ys[3] = y + dt * k3
        a[3] = np.tanh(Ys[3] @ W1 + b1)
        ys[t + 1, 0] = y + (dt / 6.0) * (k1 + 2.0 * (k2 + k3) + a[3] @ W2)
    scale = 2.0 / obs[0].size / T
    dW1, db1, dW2 = np.zeros_like(W1), np.zeros_like(b1), np.zeros_like(W2)
    lam = np.zeros_like(y0)                   # d loss / d y, carried backwards
    W1T, W2T = W1.T, W2.T
    for t in range(T - 1, -1, -1):
        lam += (ys[t + 1, 0] - obs[t]) * scale
        y, Y2, Y3, Y4 = ys[t]
        a1, a2, a3, a4 = acts[t]
        dk4 = (dt / 6.0) * lam
        d4 = (dk4 @ W2T) * (1.0 - a4 * a4)
        dY4 = d4 @ W1T
        dk3 = (dt / 3.0) * lam + dt * dY4
        d3 = (dk3 @ W2T) * (1.0 - a3 * a3)
        dY3 = d3 @ W1T
        dk2 = (dt / 3.0) * lam + (0.5 * dt) * dY3
        d2 = (dk2 @ W2T) * (1.0 - a2 * a2)
        dY2 = d2 @ W1T
        dk1 = (dt / 6.0) * lam + (0.5 * dt) * dY2
        d1 = (dk1 @ W2T) * (1.0 - a1 * a1)
        dY1 = d1 @ W1T
        dW1 += y.T @ d1 + Y2.T @ d2 + Y3.T @ d3 + Y4.T @ d4
        db1 += np.sum(d1 + d2 + d3 + d4, axis=0)
        dW2 += a1.T @ dk1 + a2.T @ dk2 + a3.T @ dk3 + a4.T @ dk4
        lam = lam + dY1 + dY2 + dY3 + dY4
    return dW1, db1, dW2
