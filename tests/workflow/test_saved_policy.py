"""Every run saves its trained policy; pearl.load brings it back in another process with the same actions."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

import pearl_py as pearl
from pearl_py.cli import main
from pearl_py.errors import UserError
from pearl_py.runtime.policy_files import BEST_MANIFEST_FILE, BEST_POLICY_FILE, MANIFEST_FILE, POLICY_FILE

TINY = dict(learning_starts=100, train_freq=50, gradient_steps=5, batch_size=16, net_arch=[16])
ROOT = Path(__file__).resolve().parents[2]

LOAD_IN_A_NEW_PROCESS = textwrap.dedent("""
    import json, sys
    import numpy as np
    import pearl_py as pearl
    answers = []
    for run_dir, obs_file, seed in zip(*[iter(sys.argv[1:])] * 3):
        policy = pearl.load(run_dir)
        obs = np.load(obs_file)
        answers.append({"actions": policy.predict(obs)[0].tolist(), "returns": policy.evaluate(3, seed=int(seed)),
                        "algorithm": policy.algorithm.name})
    print(json.dumps(answers))
""")
"""Loads each (run folder, observations file, evaluation seed) of its arguments; prints their answers as a JSON list."""

CASES = {
    "dqn": (lambda: pearl.DQN("CartPole-v1", **TINY), "CartPole-v1"),
    "ddpg": (lambda: pearl.DDPG("Pendulum-v1", **TINY), "Pendulum-v1"),
    "ppo": (lambda: pearl.PPO("CartPole-v1", n_steps=64, batch_size=32, n_epochs=2, net_arch=[16]), "CartPole-v1"),
}


def _observations(env_id: str, n: int = 32) -> np.ndarray:
    import gymnasium as gym

    env = gym.make(env_id)
    return np.stack([env.observation_space.sample() for _ in range(n)]).astype(np.float32)


@pytest.fixture(scope="module")
def trained_and_loaded_elsewhere(tmp_path_factory) -> dict:
    """Each case trained (300 steps, seed 4) into its own folder, then all loaded in one new process (one start of
    Python and torch for the three): by case, its folder, algorithm, result, observations and the new process's
    answer (actions on the observations, a 3-episode evaluation at the run's final evaluation seed)."""
    cases, argv = {}, []
    for name, (make, env_id) in CASES.items():
        folder = tmp_path_factory.mktemp(name)
        algo = make()
        result = pearl.train(algo, total_steps=300, seed=4, out=folder / "run", eval_episodes=3, progress=False)
        obs = _observations(env_id)
        np.save(folder / "obs.npy", obs)
        cases[name] = dict(run=folder / "run", algo=algo, env_id=env_id, result=result, obs=obs)
        argv += [str(folder / "run"), str(folder / "obs.npy"), str(4 + 10_000)]
    proc = subprocess.run([sys.executable, "-c", LOAD_IN_A_NEW_PROCESS, *argv], capture_output=True, text=True,
                          cwd=ROOT, timeout=300, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    for name, there in zip(cases, json.loads(proc.stdout.strip().splitlines()[-1]), strict=True):
        cases[name]["there"] = there
    return cases


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_trained_policy_acts_the_same_after_loading_in_a_new_process(trained_and_loaded_elsewhere, case):
    run, algo, env_id, result, obs, there = (trained_and_loaded_elsewhere[case][key]
                                             for key in ("run", "algo", "env_id", "result", "obs", "there"))
    assert (run / POLICY_FILE).is_file() and (run / MANIFEST_FILE).is_file()
    here = pearl.load(run)
    assert there["algorithm"] == algo.name
    actions, state = here.predict(obs)
    assert state is None  # SB3's (action, state)
    np.testing.assert_array_equal(np.asarray(there["actions"], dtype=actions.dtype), actions)
    one, _ = here.predict(obs[0])
    assert np.ndim(one) == np.ndim(actions) - 1 and np.allclose(one, actions[0], rtol=1e-5)  # batch: BLAS rounding
    with pytest.raises(ValueError, match=rf"^predict: an observation of shape \(3, 7\), but {env_id} observations "
                                         rf"have shape \({obs.shape[1]},\) \(one\) or \(n, {obs.shape[1]}\)"):
        here.predict(np.zeros((3, 7)))
    # the run's final evaluation (seed + 10,000) comes out again: the saved networks are the trained ones
    assert there["returns"] == result.eval_returns
    manifest = json.loads((run / MANIFEST_FILE).read_text())
    assert manifest["pearl_py_version"] == pearl.__version__ and manifest["env_steps"] == result.env_steps
    assert manifest["family"] == algo.family and manifest["obs_normalization"] is None


def test_the_manifest_keeps_schedules_exactly(tmp_path):
    algo = pearl.PPO("CartPole-v1", n_steps=32, batch_size=32, n_epochs=1, learning_rate="lin_0.00123456789")
    pearl.train(algo, total_steps=32, seed=0, out=tmp_path, eval_episodes=1, progress=False)
    loaded = pearl.load(tmp_path / POLICY_FILE)
    assert loaded.algorithm.config == algo.config
    assert json.loads((tmp_path / MANIFEST_FILE).read_text())["config"]["learning_rate"] == "lin_0.00123456789"


def _trained(tmp_path: Path, name: str = "run", **hyper) -> Path:
    pearl.train(pearl.DQN("CartPole-v1", **(TINY | hyper)), total_steps=200, seed=0, out=tmp_path / name,
                eval_episodes=1, progress=False)
    return tmp_path / name


def test_a_corrupted_or_foreign_policy_file_is_a_user_error_naming_it(tmp_path):
    run = _trained(tmp_path)
    weights = run / POLICY_FILE
    good = weights.read_bytes()
    weights.write_bytes(good[: len(good) // 2])
    with pytest.raises(UserError, match=f"{weights}: not a pearl_py saved policy"):
        pearl.load(run)
    torch.save({"format": 1, "nets": {"q.0.weight": np.zeros(3)}}, weights)  # a pickled numpy array: refused
    with pytest.raises(UserError, match=f"{weights}: not a pearl_py saved policy"):
        pearl.load(run)
    weights.write_bytes(good)
    manifest = run / MANIFEST_FILE
    manifest.write_text(manifest.read_text().replace('"format": 1', '"format": 7'))
    with pytest.raises(UserError, match=f"{manifest}: not a pearl_py policy manifest of format 1"):
        pearl.load(run)
    with pytest.raises(UserError, match=f"{tmp_path / 'nothing' / MANIFEST_FILE}: no saved policy there"):
        pearl.load(tmp_path / "nothing")


def test_init_from_starts_from_the_saved_networks(tmp_path):
    first = _trained(tmp_path, "first")
    # no update in the second run (learning starts after it): its saved networks are the first run's
    second = pearl.DQN("CartPole-v1", **(TINY | {"learning_starts": 10_000}))
    pearl.train(second, total_steps=100, seed=9, out=tmp_path / "second", eval_episodes=1, progress=False,
                init_from=first)
    a, b = pearl.load(first).nets.state_dict(), pearl.load(tmp_path / "second").nets.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_init_from_refuses_other_networks_or_another_algorithm(tmp_path):
    first = _trained(tmp_path, "first")
    with pytest.raises(UserError, match="its networks do not fit this algorithm's"):
        pearl.train(pearl.DQN("CartPole-v1", **(TINY | {"net_arch": [32]})), total_steps=10, init_from=first)
    with pytest.raises(UserError, match="the saved policy is dqn on CartPole-v1; this run is ddpg on Pendulum-v1"):
        pearl.train(pearl.DDPG("Pendulum-v1", **TINY), total_steps=10, init_from=first)


def test_pearl_eval_prints_the_runs_evaluation_again(tmp_path, capsys):
    run = _trained(tmp_path)
    expected = json.loads((run / "result.json").read_text())["eval_returns"]
    assert main(["eval", str(run), "--episodes", "1"]) == 0
    out = capsys.readouterr().out
    assert f"eval return {expected[0]:.1f} ± 0.0 over 1 episodes (seeds 10000..10000)" in out
    assert main(["eval", str(tmp_path / "none")]) == 2
    assert "no saved policy there" in capsys.readouterr().err


def test_pearl_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out.strip() == f"pearl_py {pearl.__version__}"


def test_eval_video_needs_render_and_an_mp4_name(tmp_path, capsys):
    run = _trained(tmp_path)
    assert main(["eval", str(run), "--video", str(tmp_path / "v.mp4")]) == 2
    assert "--render rgb_array and --video PATH go together" in capsys.readouterr().err


def test_eval_films_the_first_episode(tmp_path, capsys):
    pytest.importorskip("moviepy", reason="the video extra (moviepy) is not installed")
    run = _trained(tmp_path)
    video = tmp_path / "films" / "cartpole.mp4"
    assert main(["eval", str(run), "--episodes", "2", "--render", "rgb_array", "--video", str(video)]) == 0
    assert f"video of episode 1: {video}" in capsys.readouterr().out
    data = video.read_bytes()
    assert len(data) > 1000 and data[4:8] == b"ftyp"  # an MP4 container
    assert [p.name for p in video.parent.iterdir()] == ["cartpole.mp4"]  # the temporary folder is gone


def test_the_best_evaluated_policy_is_kept_beside_the_final_one(tmp_path, capsys):
    run = tmp_path / "run"
    result = pearl.train(pearl.DQN("CartPole-v1", **TINY), total_steps=1_000, seed=3, out=run, eval_episodes=2,
                         eval_freq=250, progress=False, log=lambda line: None)
    best = max(result.eval_history, key=lambda p: p["return_mean"])  # the first of equals: a better one replaces it
    manifest = json.loads((run / BEST_MANIFEST_FILE).read_text())
    assert manifest["best_evaluation"] == best and manifest["env_steps"] == best["step"]
    assert json.loads((run / MANIFEST_FILE).read_text())["best_evaluation"] is None
    policy = pearl.load(run, best=True)
    assert np.mean(policy.evaluate(2, seed=3 + 10_000)) == pytest.approx(best["return_mean"])  # the nets it scored with
    assert main(["eval", str(run), "--best", "--episodes", "2"]) == 0
    assert (f"run: the best evaluated policy, step {best['step']} (eval return {best['return_mean']:.1f}), seed 3): "
            f"eval return {best['return_mean']:.1f}") in capsys.readouterr().out


def test_eval_best_without_periodic_evaluations_names_the_missing_file(tmp_path, capsys):
    run = _trained(tmp_path)
    assert not (run / BEST_POLICY_FILE).exists()
    assert main(["eval", str(run), "--best"]) == 2
    assert f"{run / BEST_MANIFEST_FILE}: no saved best policy there (a run with periodic evaluations (--eval-freq)" \
        in capsys.readouterr().err


def test_only_an_evaluation_better_than_every_earlier_one_replaces_the_best_policy(tmp_path, monkeypatch):
    from pearl_py.algorithms.off_policy.learner import Learner
    from pearl_py.runtime import evaluation

    algo = pearl.DQN("CartPole-v1", **TINY)
    learner = Learner(algo, "cpu")
    history = [{"step": 100, "return_mean": 6.0, "return_std": 0.0}]        # a resumed run's earlier session
    evals = evaluation.PeriodicEvaluation(algo, learner, 2, seed=0, history=history, out_dir=tmp_path)
    for step, score in [(200, 5.0), (300, 9.0), (400, 7.0), (500, 9.0)]:
        monkeypatch.setattr(evaluation, "play", lambda *args, s=score: ([s, s], [10, 10]))
        learner.gradient_steps = step // 10
        evals.run(step)
    manifest = json.loads((tmp_path / BEST_MANIFEST_FILE).read_text())
    assert manifest["best_evaluation"] == {"step": 300, "return_mean": 9.0, "return_std": 0.0}
    assert manifest["gradient_steps"] == 30 and [p["step"] for p in history] == [100, 200, 300, 400, 500]
