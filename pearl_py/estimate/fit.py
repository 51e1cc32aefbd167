"""Fit a latency model to micro-benchmark points and pick the form that predicts best.

Three forms (``linear``, ``powerlaw``, ``piecewise``: docs/cost-models.md has each with its source), each
fitted to minimise *relative* error (latencies span 1e-6..1e-1 s); :func:`select_model` scores them by
k-fold cross-validation (median absolute percentage error on the held-out fold) and keeps the best,
refitted on all points.

Example::

    >>> xs = [{"n": n} for n in (1, 2, 4, 8, 16, 32)]
    >>> ys = [1e-5 + 2e-6 * x["n"] for x in xs]
    >>> model = select_model(xs, ys, primary="n", features=["n"])
    >>> round(model.predict({"n": 64}) * 1e6, 1)
    138.0
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

FORMS = ("linear", "powerlaw", "piecewise")


@dataclass(frozen=True)
class FittedModel:
    """A fitted latency model; plain data so it caches as JSON."""

    form: str
    features: tuple[str, ...]
    coef: tuple[float, ...]
    primary: str
    knots: tuple[float, ...] = ()
    cv_mape: float = float("nan")
    n_points: int = 0
    scores: dict[str, float] = field(default_factory=dict)

    def predict(self, x: dict[str, float]) -> float:
        """Predicted seconds for one feature dict."""
        if self.form == "powerlaw":
            a, b, c = self.coef
            return a * x[self.primary] ** b + c
        return float(np.dot(self.coef, _basis(self.form, x, self.features, self.primary, self.knots)))

    def to_dict(self) -> dict:
        return {"form": self.form, "features": list(self.features), "coef": list(self.coef),
                "primary": self.primary, "knots": list(self.knots), "cv_mape": self.cv_mape,
                "n_points": self.n_points, "scores": dict(self.scores)}

    @classmethod
    def from_dict(cls, d: dict) -> FittedModel:
        return cls(form=d["form"], features=tuple(d["features"]), coef=tuple(d["coef"]), primary=d["primary"],
                   knots=tuple(d.get("knots", ())), cv_mape=d.get("cv_mape", float("nan")),
                   n_points=d.get("n_points", 0), scores=dict(d.get("scores", {})))


def _basis(form: str, x: dict[str, float], features: Sequence[str], primary: str, knots: Sequence[float]) -> list[float]:
    row = [1.0] + [x[f] for f in features]
    if form == "piecewise":
        row += [max(0.0, x[primary] - k) for k in knots]
    return row


def fit_form(form: str, xs: Sequence[dict], ys: Sequence[float], primary: str, features: Sequence[str]) -> FittedModel:
    """Fit one form to points ``xs`` (feature dicts) and latencies ``ys`` (seconds)."""
    from scipy.optimize import OptimizeWarning, curve_fit, lsq_linear  # here: only profiling fits; a run reads fits

    y = np.asarray(ys, dtype=float)
    if form == "powerlaw":
        n = np.array([x[primary] for x in xs], dtype=float)
        slope, intercept = np.polyfit(np.log(n), np.log(y), 1)
        p0 = (math.exp(intercept), min(max(slope, 0.0), 3.0), 0.0)
        try:
            with warnings.catch_warnings():  # few points: the covariance is not needed, only the fit
                warnings.simplefilter("ignore", OptimizeWarning)
                (a, b, c), _ = curve_fit(lambda v, a, b, c: a * v ** b + c, n, y, p0=p0, sigma=y,
                                         bounds=([0, 0, 0], [np.inf, 3, np.inf]), maxfev=20000)
        except RuntimeError:
            a, b, c = p0
        return FittedModel("powerlaw", tuple(features), (float(a), float(b), float(c)), primary, n_points=len(y))
    knots: tuple[float, ...] = ()
    if form == "piecewise":
        p = np.array([x[primary] for x in xs], dtype=float)
        knots = tuple(float(k) for k in np.unique(np.quantile(p, [1 / 3, 2 / 3])))
    basis = np.array([_basis(form, x, features, primary, knots) for x in xs])
    scale = np.abs(basis).max(axis=0)
    scale[scale == 0] = 1.0
    # Intercept and feature slopes are >= 0; hinge slopes may be negative (a concave bend),
    # but the total slope after every knot stays >= 0 (a hinge cannot make the model decrease).
    lower = np.zeros(basis.shape[1])
    lower[1 + len(features):] = -np.inf
    with np.errstate(invalid="ignore"):  # scipy's trf steps multiply the unbounded hinge bounds (-inf) by 0
        coef = lsq_linear((basis / scale) / y[:, None], np.ones_like(y), bounds=(lower, np.inf)).x / scale
    if form == "piecewise":
        slope = coef[1 + list(features).index(primary)]
        for i in range(len(knots)):
            slope += coef[1 + len(features) + i]
            if slope < 0:
                coef[1 + len(features) + i] -= slope
                slope = 0.0
    return FittedModel(form, tuple(features), tuple(float(c) for c in coef), primary, knots, n_points=len(y))


def mape(model: FittedModel, xs: Sequence[dict], ys: Sequence[float]) -> float:
    """Median absolute percentage error of ``model`` on points ``xs``/``ys``."""
    errors = [abs(model.predict(x) - y) / y for x, y in zip(xs, ys)]
    return float(np.median(errors)) * 100


def select_model(xs: Sequence[dict], ys: Sequence[float], primary: str, features: Sequence[str],
                 folds: int = 5, forms: Sequence[str] = FORMS) -> FittedModel:
    """Best form by k-fold cross-validated median APE, refitted on every point.

    Ties within 0.5 percentage points go to the earlier (simpler) form in ``forms``.
    """
    n = len(ys)
    if n < 3:
        raise ValueError(f"need at least 3 calibration points, got {n}")
    order = np.random.default_rng(0).permutation(n)
    k = min(folds, n)
    scores = {}
    for form in forms:
        errors = []
        for fold in range(k):
            test = order[fold::k]
            train = np.setdiff1d(order, test)
            model = fit_form(form, [xs[i] for i in train], [ys[i] for i in train], primary, features)
            errors += [abs(model.predict(xs[i]) - ys[i]) / ys[i] for i in test]
        scores[form] = float(np.median(errors)) * 100
    lowest = min(scores.values())
    best = next(f for f in forms if scores[f] <= lowest + 0.5)
    model = fit_form(best, xs, ys, primary, features)
    return FittedModel(model.form, model.features, model.coef, primary, model.knots, scores[best], n, scores)
