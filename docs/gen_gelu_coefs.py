"""Fit the rational functions of the float32 gelu path (tgrad/backends/_numpy_nn.py,
``_GELU32_FWD`` and ``_GELU32_BWD``) and print them with their measured error.

With a = |x|, b = a / 2, e = exp(-a^2 / 2), R(a) = Phi(-a) exp(a^2 / 2) (Mills' ratio / sqrt(2 pi),
smooth, 1/2 at 0, ~ 1 / (a sqrt(2 pi)) for large a) and a0 = 0.75179... the root of
gelu'(x) = Phi(x) + x phi(x) at x = -a0:

    gelu(x)  = relu(x) - a e R(a)                            F(b) = 2 R(2 b)       ~ P_4(b) / Q_5(b)
    gelu'(x) = (relu(x) - a (a - a0) e H(a)) / x             G(b) = 4 H(2 b)       ~ P_4(b) / Q_4(b)
               H(a) = (R(a) - a / sqrt(2 pi)) / (a - a0)

(relu(x) / x and a e R(a) / x give Phi's two sides, x e / sqrt(2 pi) is x phi(x); H is smooth
through a0, so the derivative keeps its relative precision at its root, where Phi + x phi
cancels). Both are fitted for relative error on b in [0, 7.25] (|x| <= 14.5: past it
x Phi(x) and x phi(x) are below half of float32's least subnormal) by Lawson-weighted
linearised least squares (Loeb's iteration) against mpmath at 50 digits, denominators
monic and free of real roots >= 0. Run: python docs/gen_gelu_coefs.py (numpy, mpmath).
"""

import mpmath as mp
import numpy as np

mp.mp.dps = 50
A0 = -mp.findroot(lambda x: mp.ncdf(x) + x * mp.npdf(x), -0.75)
C = 1 / mp.sqrt(2 * mp.pi)


def r_exact(a):
    return mp.ncdf(-a) * mp.exp(a * a / 2)


def f_target(b):
    return 2 * r_exact(2 * b)


def g_target(b):
    a = 2 * b
    return 4 * (r_exact(a) - C * a) / (a - A0)


def fit(f, n: int, m: int, hi: float, samples: int = 3000, iters: int = 120):
    """P_n / Q_m (Q monic, Q(b) != 0 on b >= 0) minimising max |P/Q - f| / |f| on [0, hi]."""
    b = hi * (1 - np.cos(np.linspace(0, np.pi, samples))) / 2
    b = b[np.abs(2 * b - float(A0)) > 1e-9]  # (G's 0/0 point itself)
    y = np.array([float(f(mp.mpf(float(v)))) for v in b])
    vn, vm = np.vander(b, n + 1, increasing=True), np.vander(b, m + 1, increasing=True)
    w, q_prev, best = np.ones(b.size), np.ones(b.size), None
    for _ in range(iters):  # P - y Q = 0 with Q(0) = 1, scaled by 1 / (y Q_prev), Lawson weights
        s = w / (np.abs(y) * q_prev)
        sol = np.linalg.lstsq(np.hstack([vn, -y[:, None] * vm[:, 1:]]) * s[:, None], y * s,
                              rcond=None)[0]
        p, q = sol[:n + 1], np.concatenate([[1.0], sol[n + 1:]])
        err = (vn @ p / (vm @ q) - y) / y
        if best is None or np.abs(err).max() < best[0]:
            best = (np.abs(err).max(), p / q[-1], q / q[-1])
        q_prev = np.abs(vm @ q)
        w = w * np.sqrt(np.abs(err))
        w /= w.max()
    return best


def main() -> None:
    print(f"a0 = {mp.nstr(A0, 25)}")
    for name, f, n, m in (("F (forward)", f_target, 4, 5), ("G (backward)", g_target, 4, 4)):
        err, p, q = fit(f, n, m, 7.25)
        roots = np.roots(q[::-1])
        assert not np.any((np.abs(roots.imag) < 1e-12) & (roots.real >= 0)), roots
        check = np.linspace(0, 7.25, 20001)[1:]
        ref = np.array([float(f(mp.mpf(float(v)))) for v in check])
        got = np.polyval(p[::-1], check) / np.polyval(q[::-1], check)
        print(f"{name}: max relative error {err:.2e} at the fit nodes, "
              f"{np.abs(got / ref - 1).max():.2e} on 20000 points")
        print("  numerator (b^0 ..):", [float(v) for v in p])
        print("  denominator (b^0 .., monic):", [float(v) for v in q])


if __name__ == "__main__":
    main()
