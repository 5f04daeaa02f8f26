"""Would numba loops pay on the realistic workloads? Hand-written numba gradients, timed (#33).

``python -m benchmarks.numba_loops_probe [--rounds N] [--only NAME,...]`` (where numba is
installed): for heat (a stencil stepped in a loop), matfact (integer-index gathers and
scatter-adds), gmm (a broadcast-then-reduce over (n, k, d)), rnn, gru and ode_rk4 (loops of
matrix products), per-call medians of interleaved rounds in one process of: adcompiler's
NumPy-backend gradient, the hand-written NumPy gradient (``benchmarks.handwritten``) and the
gradient an emitter would have to write as numba code, by hand here (one serial ``njit`` kernel
per workload: forward and reverse sweeps as loops, matrix products left to BLAS through
``@``). Every numba gradient is checked against the hand-written one before it is timed. Prints
a Markdown table of ratios to the hand-written gradient (benchmarks/NUMBA.md quotes it).

One thread everywhere: run it with ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
MKL_NUM_THREADS=1 NUMBA_NUM_THREADS=1`` (the kernels are serial anyway).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import adcompiler
from benchmarks import handwritten, workloads

_KERNELS: dict = {}


def _kernels():
    """The numba gradients, compiled on first use (numba is imported here only)."""
    if _KERNELS:
        return _KERNELS
    import numba

    from adcompiler.runtime.numba_math import vexp, vtanh

    jit = numba.njit(fastmath={"contract"}, error_model="numpy")

    @jit
    def lap_into(u, out):
        n = u.shape[0]
        out[0] = u[n - 1] - 2.0 * u[0] + u[1]
        for i in range(1, n - 1):
            out[i] = u[i - 1] - 2.0 * u[i] + u[i + 1]
        out[n - 1] = u[n - 2] - 2.0 * u[n - 1] + u[0]

    @jit
    def heat(u0, kappa, obs):
        T, n = obs.shape
        us = np.empty((T + 1, n))
        lap = np.empty(n)
        us[0] = u0
        for t in range(T):
            lap_into(us[t], lap)
            for i in range(n):
                us[t + 1, i] = us[t, i] + kappa[i] * lap[i]
        lam, dk, kl = np.zeros(n), np.zeros(n), np.empty(n)
        for t in range(T - 1, -1, -1):
            lap_into(us[t], lap)
            for i in range(n):
                lam[i] += 2.0 * (us[t + 1, i] - obs[t, i])
                dk[i] += lam[i] * lap[i]
                kl[i] = kappa[i] * lam[i]
            lap_into(kl, lap)
            for i in range(n):
                lam[i] += lap[i]
        return lam, dk

    @jit
    def matfact(U, V, iu, iv, r):
        dU, dV = 0.02 * U, 0.02 * V
        rank = U.shape[1]
        for p in range(iu.shape[0]):
            a, b = iu[p], iv[p]
            s = 0.0
            for c in range(rank):
                s += U[a, c] * V[b, c]
            g = 2.0 * (s - r[p])
            for c in range(rank):
                dU[a, c] += g * V[b, c]
                dV[b, c] += g * U[a, c]
        return dU, dV

    @jit
    def gmm(mu, log_sigma, logit_w, X):
        n, d = X.shape
        k = mu.shape[0]
        inv_var = np.empty(k)
        log_w = np.empty(k)
        top = np.max(logit_w)
        total = 0.0
        for c in range(k):
            inv_var[c] = vexp(-2.0 * log_sigma[c])
            total += vexp(logit_w[c] - top)
        for c in range(k):
            log_w[c] = logit_w[c] - top - np.log(total) - d * log_sigma[c]
        nk, rsq, rx = np.zeros(k), np.zeros(k), np.zeros((k, d))
        comp, sq = np.empty(k), np.empty(k)
        for i in range(n):
            m = -np.inf
            for c in range(k):
                s = 0.0
                for e in range(d):
                    diff = X[i, e] - mu[c, e]
                    s += diff * diff
                sq[c] = s
                comp[c] = log_w[c] - 0.5 * s * inv_var[c]
                m = max(m, comp[c])
            z = 0.0
            for c in range(k):
                comp[c] = vexp(comp[c] - m)
                z += comp[c]
            for c in range(k):
                r = comp[c] / z
                nk[c] += r
                rsq[c] += r * sq[c]
                for e in range(d):
                    rx[c, e] += r * X[i, e]
        dmu = np.empty((k, d))
        for c in range(k):
            for e in range(d):
                dmu[c, e] = inv_var[c] / n * (nk[c] * mu[c, e] - rx[c, e])
        w = np.exp(logit_w - top) / total
        return dmu, (d * nk - rsq * inv_var) / n, w - nk / n

    @jit
    def rnn(Wh, Wx, b, x, h0):
        T, batch, d_in = x.shape
        H = Wh.shape[0]
        inputs = (np.ascontiguousarray(x).reshape(T * batch, d_in) @ Wx).reshape(T, batch, H)
        hs = np.empty((T + 1, batch, H))
        hs[0] = h0
        for t in range(T):
            a = hs[t] @ Wh
            for i in range(batch):
                for j in range(H):
                    hs[t + 1, i, j] = vtanh(a[i, j] + inputs[t, i, j] + b[j])
        da = np.empty((T, batch, H))
        dh = 2.0 * hs[T]
        WhT = np.ascontiguousarray(Wh.T)
        for t in range(T - 1, -1, -1):
            for i in range(batch):
                for j in range(H):
                    y = hs[t + 1, i, j]
                    da[t, i, j] = dh[i, j] * (1.0 - y * y)
            dh = da[t] @ WhT
        flat = da.reshape(T * batch, H)
        prev = np.ascontiguousarray(hs[:T]).reshape(T * batch, H)
        xf = np.ascontiguousarray(x).reshape(T * batch, d_in)
        return prev.T @ flat, xf.T @ flat, flat.sum(axis=0)

    @jit
    def sigmoid(v):
        return 1.0 / (1.0 + vexp(-v))

    @jit
    def gru(Wz, Uz, bz, Wr, Ur, br, Wh, Uh, bh, x, h0):
        T, batch, d_in = x.shape
        H = Uz.shape[0]
        flat = np.ascontiguousarray(x).reshape(T * batch, d_in)
        xz = (flat @ Wz).reshape(T, batch, H)
        xr = (flat @ Wr).reshape(T, batch, H)
        xh = (flat @ Wh).reshape(T, batch, H)
        hs = np.empty((T + 1, batch, H))
        zs, rs, cs, rh = (np.empty((T, batch, H)), np.empty((T, batch, H)),
                          np.empty((T, batch, H)), np.empty((T, batch, H)))
        hs[0] = h0
        for t in range(T):
            az, ar = hs[t] @ Uz, hs[t] @ Ur
            for i in range(batch):
                for j in range(H):
                    zs[t, i, j] = sigmoid(xz[t, i, j] + az[i, j] + bz[j])
                    rs[t, i, j] = sigmoid(xr[t, i, j] + ar[i, j] + br[j])
                    rh[t, i, j] = rs[t, i, j] * hs[t, i, j]
            ac = rh[t] @ Uh
            for i in range(batch):
                for j in range(H):
                    c = vtanh(xh[t, i, j] + ac[i, j] + bh[j])
                    cs[t, i, j] = c
                    h = hs[t, i, j]
                    hs[t + 1, i, j] = h + zs[t, i, j] * (c - h)
        daz, dar, dac = np.empty((T, batch, H)), np.empty((T, batch, H)), np.empty((T, batch, H))
        dh = 2.0 * hs[T]
        UzT, UrT, UhT = (np.ascontiguousarray(Uz.T), np.ascontiguousarray(Ur.T),
                         np.ascontiguousarray(Uh.T))
        for t in range(T - 1, -1, -1):
            for i in range(batch):
                for j in range(H):
                    z, c, h = zs[t, i, j], cs[t, i, j], hs[t, i, j]
                    dac[t, i, j] = dh[i, j] * z * (1.0 - c * c)
                    daz[t, i, j] = dh[i, j] * (c - h) * z * (1.0 - z)
            drh = dac[t] @ UhT
            for i in range(batch):
                for j in range(H):
                    r, h = rs[t, i, j], hs[t, i, j]
                    dar[t, i, j] = drh[i, j] * h * r * (1.0 - r)
            back = daz[t] @ UzT + dar[t] @ UrT
            for i in range(batch):
                for j in range(H):
                    dh[i, j] = (dh[i, j] * (1.0 - zs[t, i, j]) + drh[i, j] * rs[t, i, j]
                                + back[i, j])
        gz, gr, gc = daz.reshape(-1, H), dar.reshape(-1, H), dac.reshape(-1, H)
        prev = np.ascontiguousarray(hs[:T]).reshape(-1, H)
        rhf = rh.reshape(-1, H)
        return (flat.T @ gz, prev.T @ gz, gz.sum(axis=0), flat.T @ gr, prev.T @ gr,
                gr.sum(axis=0), flat.T @ gc, rhf.T @ gc, gc.sum(axis=0))

    @jit
    def tanh_into(a, b, out):
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                out[i, j] = vtanh(a[i, j] + b[j])

    @jit
    def ode_rk4(W1, b1, W2, y0, obs):
        T = obs.shape[0]
        batch, d = y0.shape
        Hd = W1.shape[1]
        dt = 0.05
        ys = np.empty((T + 1, batch, d))
        hs = np.empty((T, 4, batch, Hd))     # tanh of each stage, kept for the reverse sweep
        ins = np.empty((T, 4, batch, d))     # each stage's input
        ys[0] = y0
        for t in range(T):
            y = ys[t]
            acc = np.zeros((batch, d))
            stage_in = y.copy()
            for s in range(4):
                ins[t, s] = stage_in
                tanh_into(stage_in @ W1, b1, hs[t, s])
                k = hs[t, s] @ W2
                w = 1.0 if (s == 0 or s == 3) else 2.0
                acc += w * k
                step = dt if s == 2 else 0.5 * dt
                stage_in = y + step * k
            ys[t + 1] = y + dt / 6.0 * acc
        dW1, db1, dW2 = np.zeros_like(W1), np.zeros(Hd), np.zeros_like(W2)
        dy = np.zeros((batch, d))
        W1T, W2T = np.ascontiguousarray(W1.T), np.ascontiguousarray(W2.T)
        scale = 2.0 / (batch * d * T)
        for t in range(T - 1, -1, -1):
            dy += scale * (ys[t + 1] - obs[t])
            dyt = dy.copy()                  # d / d y_t: the direct path first
            dstage = np.zeros((batch, d))    # d / d (stage s+1's input)
            for s in range(3, -1, -1):
                w = 1.0 if (s == 0 or s == 3) else 2.0
                dk = (dt / 6.0 * w) * dy
                if s < 3:
                    step = dt if s == 2 else 0.5 * dt
                    dk += step * dstage
                h = hs[t, s]
                dW2 += h.T @ dk
                da = (dk @ W2T) * (1.0 - h * h)
                dW1 += ins[t, s].T @ da
                db1 += da.sum(axis=0)
                dstage = da @ W1T
                dyt += dstage
            dy = dyt
        return dW1, db1, dW2

    _KERNELS.update(heat=heat, matfact=matfact, gmm=gmm, rnn=rnn, gru=gru, ode_rk4=ode_rk4)
    return _KERNELS


def _median_rounds(fns, args, rounds):
    """Per-call medians (s) of interleaved rounds; each round calls each function enough
    times to take about 20 ms."""
    reps = []
    for f in fns:
        start = time.perf_counter()
        f(*args)
        reps.append(max(1, int(0.02 / max(time.perf_counter() - start, 1e-6))))
    times = [[] for _ in fns]
    for _ in range(rounds):
        for f, rep, out in zip(fns, reps, times):
            start = time.perf_counter()
            for _ in range(rep):
                f(*args)
            out.append((time.perf_counter() - start) / rep)
    return [float(np.median(t)) for t in times]


def _error(got, want) -> float:
    return max(float(np.max(np.abs(np.asarray(g) - w)) / max(float(np.max(np.abs(w))), 1e-300))
               for g, w in zip(got, want))


def probe(name, rounds):
    """One table row: the workload's three gradients' medians and the numba kernel's error."""
    w = workloads.get(name)
    args = w.make()
    ours = adcompiler.grad(w.fn, wrt=w.wrt)
    kernel = _kernels()[name]
    start = time.perf_counter()
    got = kernel(*args)
    compile_s = time.perf_counter() - start
    want = w.hand(*args)
    err = _error(got, want)
    backend = adcompiler.grad(w.fn, wrt=w.wrt, backend="numba")
    err_backend = _error(backend(*args), want)
    emitted = "@numba.njit" in backend.source
    t_hand, t_ours, t_numba, t_backend = _median_rounds([w.hand, ours, kernel, backend], args,
                                                        rounds)
    return (w.title, t_hand, t_ours, t_numba, err, compile_s, t_backend, emitted, err_backend)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--only", default="heat,matfact,gmm,rnn,gru,ode_rk4")
    opts = parser.parse_args(argv)
    print("| workload | hand-written NumPy | adcompiler (NumPy) / hand | numba by hand / hand "
          "| numba by hand / adcompiler | backend='numba' / hand | backend='numba' writes "
          "| errors (by hand; backend) | numba compile |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in opts.only.split(","):
        title, hand, ours, nb, err, comp, back, emitted, err_back = probe(name, opts.rounds)
        print(f"| {title} | {hand * 1e3:.2f} ms | {ours / hand:.2f} | {nb / hand:.2f} | "
              f"{nb / ours:.2f} | {back / hand:.2f} | {'numba' if emitted else 'NumPy'} | "
              f"{err:.1e}; {err_back:.1e} | {comp:.2f} s |", flush=True)


if __name__ == "__main__":
    main()
