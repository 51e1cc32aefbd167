"""Model fitting and selection, and the per-machine calibration cache."""
from __future__ import annotations

import json

import pytest

from pearl_py.estimate.calibration import Calibration, default_path, model_key
from pearl_py.estimate.fit import FittedModel, fit_form, mape, select_model


def test_linear_data_selects_linear_and_extrapolates():
    xs = [{"n": n, "m": n % 3} for n in (1, 2, 4, 8, 16, 32, 64)]
    ys = [1e-5 + 2e-6 * x["n"] + 1e-6 * x["m"] for x in xs]
    model = select_model(xs, ys, primary="n", features=["n", "m"])
    assert model.form == "linear" and model.cv_mape < 1
    assert model.predict({"n": 128, "m": 0}) == pytest.approx(1e-5 + 2e-6 * 128, rel=1e-6)


def test_power_law_data_selects_power_law():
    xs = [{"n": float(n)} for n in (1, 3, 10, 30, 100, 300, 1000)]
    ys = [3e-6 * x["n"] ** 1.5 + 2e-5 for x in xs]
    model = select_model(xs, ys, primary="n", features=["n"])
    assert model.form == "powerlaw" and model.coef[1] == pytest.approx(1.5, rel=1e-3)


def test_piecewise_never_decreases():
    xs = [{"n": float(n)} for n in (1, 2, 4, 8, 16, 32, 64, 128)]
    ys = [1e-4 + 1e-5 * min(x["n"], 8) for x in xs]      # rises, then flat
    model = fit_form("piecewise", xs, ys, "n", ["n"])
    preds = [model.predict({"n": n}) for n in range(1, 400, 7)]
    assert all(b >= a - 1e-15 for a, b in zip(preds, preds[1:]))
    assert mape(model, xs, ys) < 5


def test_model_round_trips_as_json():
    model = FittedModel("piecewise", ("n",), (1.0, 2.0, 3.0), "n", (4.0,), 1.5, 9, {"linear": 2.0})
    assert FittedModel.from_dict(json.loads(json.dumps(model.to_dict()))) == model


def test_calibration_cache_is_per_machine_and_atomic(tmp_path, monkeypatch):
    monkeypatch.setenv("PEARL_CACHE_DIR", str(tmp_path))
    assert Calibration.load_default() is None
    cal = Calibration("abc", {model_key("env_step", "reference", "CartPole-v1"):
                              FittedModel("linear", ("n_envs",), (1e-5, 2e-5), "n_envs")})
    path = cal.save()
    assert path == default_path() and path.parent == tmp_path and path.name.startswith("calibration-")
    assert [p.name for p in tmp_path.iterdir()] == [path.name]          # no temporary file left behind
    loaded = Calibration.load_default()
    assert loaded.model("env_step", "reference", "CartPole-v1").coef == (1e-5, 2e-5)
    assert loaded.model("env_step", "reference", "Hopper-v4") is None
    path.write_text("{broken")
    assert Calibration.load_default() is None
