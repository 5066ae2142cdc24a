"""The statistics of ``trtrace bench`` (SciPy): per-figure summaries and variant comparisons.

- A figure's median gets a distribution-free 95% confidence interval from the order statistics
  (the binomial(n, 1/2) quantiles: no assumption on the shape of the distribution, which for build
  times is skewed). Below 6 runs no pair of order statistics reaches 95%: the interval is then the
  range, and the summary says so.
- Outliers are flagged as hyperfine does: a modified Z-score (distance to the median in units of
  the normal-consistent median absolute deviation) above 14.826.
- A variant against the first: the ratio of medians, a 95% bootstrap (percentile) interval of that
  ratio, and a two-sided Mann-Whitney U test. The p-values of all the comparisons of one report are
  Holm-adjusted together (many phases are compared at once, and an unadjusted 5% test would call
  some difference significant in most reports of identical variants). A difference is significant
  when its adjusted p < alpha and the ratio is at least `min_effect` away from 1.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
from scipy import stats as st  # type: ignore[import-untyped]  # no stubs ship with SciPy

OUTLIER_Z = 14.826


def summary(xs: Sequence[float]) -> dict[str, Any]:
    a = np.asarray(xs, dtype=float)
    n = len(a)
    if n == 0:
        return {"n": 0}
    lo, hi, exact = median_interval(a)
    return {
        "n": n,
        "min": float(a.min()),
        "max": float(a.max()),
        "median": float(np.median(a)),
        "mean": float(a.mean()),
        "stdev": float(a.std(ddof=1)) if n > 1 else 0.0,
        "p90": float(np.percentile(a, 90)),
        "median_ci95": [lo, hi],
        "median_ci95_exact": exact,
        "outliers": outliers(a),
    }


def median_interval(a: np.ndarray, level: float = 0.95) -> tuple[float, float, bool]:
    """The order-statistic interval of the median; (min, max, False) when n is too small for `level`."""
    s = np.sort(a)
    n = len(s)
    k = int(st.binom.ppf((1 - level) / 2, n, 0.5))  # lower rank (0-based index k - 1 .. n - k)
    if k < 1:
        return float(s[0]), float(s[-1]), False
    return float(s[k - 1]), float(s[n - k]), True


def outliers(a: np.ndarray) -> list[int]:
    mad = st.median_abs_deviation(a, scale="normal")
    if mad == 0:
        return []
    z = np.abs(a - np.median(a)) / mad
    return [int(i) for i in np.nonzero(z > OUTLIER_Z)[0]]


def compare(base: Sequence[float], other: Sequence[float], seed: int = 0) -> dict[str, Any]:
    """other against base: ratio of medians, its 95% bootstrap interval, Mann-Whitney p (unadjusted)."""
    b, o = np.asarray(base, dtype=float), np.asarray(other, dtype=float)
    if len(b) == 0 or len(o) == 0:
        return {"ratio": None, "ci95": None, "p": None}
    mb, mo = float(np.median(b)), float(np.median(o))
    if len(b) < 2 or len(o) < 2 or mb <= 0:
        return {"ratio": (mo / mb) if mb > 0 else None, "ci95": None, "p": None}
    ratio = mo / mb

    def stat(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        den = np.median(x, axis=axis)
        ratios: np.ndarray = np.median(y, axis=axis) / np.where(den > 0, den, np.nan)
        return ratios

    boot = st.bootstrap(
        (b, o),
        stat,
        n_resamples=2000,
        method="percentile",
        confidence_level=0.95,
        random_state=np.random.default_rng(seed),
        vectorized=True,
    )
    ci = [float(boot.confidence_interval.low), float(boot.confidence_interval.high)]
    same = np.all(b == b[0]) and np.all(o == b[0])
    p = 1.0 if same else float(st.mannwhitneyu(b, o, alternative="two-sided").pvalue)
    return {"ratio": ratio, "ci95": [c if math.isfinite(c) else None for c in ci], "p": p}


def holm(ps: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values (None stays None)."""
    idx = [i for i, p in enumerate(ps) if p is not None]
    order = sorted(idx, key=lambda i: ps[i])  # type: ignore[arg-type, return-value]
    m, out, run = len(order), list(ps), 0.0
    for rank, i in enumerate(order):
        run = max(run, min(1.0, (m - rank) * float(ps[i])))  # type: ignore[arg-type]
        out[i] = run
    return out


def verdict(ratio: float | None, p_adj: float | None, alpha: float, min_effect: float) -> str:
    if ratio is None or p_adj is None:
        return "not enough runs"
    if p_adj < alpha and abs(ratio - 1) >= min_effect:
        return "slower" if ratio > 1 else "faster"
    return "no significant difference"
