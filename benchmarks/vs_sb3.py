"""pearl_py vs Stable-Baselines3 on the same zoo config, side by side in one script.

Each backend trains the config's algorithm for its total_steps (one torch thread per
process, except pearl_py's learner, which runs the plan's threads: 2 where the optimizer finds
the calibrated 2-thread update faster, docs/optimizer.md; ``--sb3-threads`` gives SB3 more),
then runs 10 greedy evaluation episodes. Backends: ``sb3``; ``serial``
(pearl_py's reference executor); ``auto`` (what ``pearl run --auto`` runs: the plan the model finds
fastest over the run for this machine, serialized in one process or parallel with actor processes,
``pearl_py.pipeline.planning.auto_plan``); ``parallel`` (pearl_py's local parallel runtime: actor
processes collecting while the learner trains, under the best parallel plan). ``--plan single``
puts every kernel on the CPU instead of solving; the kernel variants are ``--variant`` when given:
the learner update's, and the inference's where the kernel library has a variant of that name; the
learner's threads are ``--learner-threads`` when given. Printed per seed: training wall time of
each backend, the ratio SB3 / backend (> 1: pearl_py is faster), eval returns, the
peak resident memory of the process tree (this process and its reaped children) and the whole
process's wall time. At the end, per backend: the median ratios (whole process and training) and how
many seeds reached the env's
"solved" return (the issue's bar: 475 on CartPole-v1, -200 on Pendulum-v1; ``--solved``).
Final returns of DQN on CartPole are bimodal for every implementation (SB3 included), so
compare these counts over several seeds, not one seed's return.

    pip install -c constraints.txt ".[bench]"
    python benchmarks/vs_sb3.py examples/configs/dqn_cartpole.yaml --seeds 0 1 2
    python benchmarks/vs_sb3.py examples/configs/ddpg_pendulum.yaml --backends sb3 parallel
    python benchmarks/vs_sb3.py examples/configs/td3_pendulum.yaml --seeds 0 1 2
    python benchmarks/vs_sb3.py examples/configs/sac_pendulum.yaml --seeds 0 1 2
    python benchmarks/vs_sb3.py examples/configs/ppo_cartpole.yaml --seeds 0 1 2
    python benchmarks/vs_sb3.py examples/configs/a2c_cartpole.yaml --seeds 0 1 2

Pixels (issue 20): DQN on MinAtar Breakout learns side by side with SB3's ``CnnPolicy`` DQN given the
same feature extractor (pearl_py's ``small_cnn`` module inside an SB3 ``BaseFeaturesExtractor``), the
same preprocessed env (``pearl_py.envs.make_env``) and the same hyperparameters; on Atari
it measures throughput, not learning: a fixed number of steps without evaluation.

    python benchmarks/vs_sb3.py examples/configs/dqn_minatar_breakout.yaml --seeds 0 1 2 --backends sb3 serial
    python benchmarks/vs_sb3.py examples/configs/dqn_breakout.yaml --steps 50000 --set learning_starts=10000 \
        --eval-episodes 0 --seeds 0 1 2 --backends sb3 serial parallel

Printed per seed besides: ``process s``, the whole process's wall time (start to exit: imports, env and
network construction, training, evaluation). SB3's process imports only what an SB3 script would (torch,
gymnasium, stable_baselines3: its model comes as plain values, ``sb3_side.py``); before 2026-11-24 it also
imported pearl_py (~0.7 s of its measured time, flattering pearl_py's whole-process ratios by ~4%).

TD3 and SAC map one to one too: TD3's ``policy_delay``, ``target_policy_noise``,
``target_noise_clip`` and ``noise_std`` (SB3's ``NormalActionNoise``; pearl_py's unset
``target_update_interval`` is SB3's: the targets move with the actor), SAC's ``ent_coef``
("auto", "auto_0.1" or a number), ``target_entropy`` and ``target_update_interval``.

PPO and A2C map one to one as well (:func:`sb3_job`): SB3 steps the config's ``n_envs``
CartPole envs in one ``DummyVecEnv`` (as the zoo does), pearl_py's serial executor in one vector
env, its parallel runtime split among the plan's actors (synchronous: collection, then the
epochs); ``lin_<x>`` schedules are the same callables of the remaining progress for both.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import resource
import time
from typing import TYPE_CHECKING, Any

import numpy as np
import sb3_side

if TYPE_CHECKING:
    import pearl_py as pearl

# pearl_py is imported inside the functions its side runs: this module is re-imported by every spawned child,
# SB3's included, which must pay only its own imports (sb3_side.py)


def plain(value: Any) -> Any:
    """A hyperparameter as a job carries it: a schedule as ``[sb3_side.LINEAR, start]`` or its number."""
    from pearl_py.algorithms.on_policy.schedules import Schedule

    if isinstance(value, Schedule):
        return [sb3_side.LINEAR, value.initial] if value.linear else value.initial
    return value


def env_of(cfg: pearl.RunConfig) -> dict[str, Any] | None:
    """How SB3's side makes the env: None for a plain gymnasium id; else pearl_py's preprocessing (Atari, MinAtar,
    random frames, or a frame stack), with the frame stack."""
    from pearl_py.envs.families import family

    stack = cfg.hyperparameters.frame_stack
    return None if family(cfg.settings.env) == "gym" and stack is None else {"frame_stack": stack}


def extractor_of(cfg: pearl.RunConfig) -> dict[str, Any] | None:
    """For observations pearl_py runs through a CNN: the frame stack and extractor SB3 gets (pearl_py's CNN)."""
    from pearl_py.algorithms.cnn import resolve_extractor
    from pearl_py.envs import EnvSpec

    h = cfg.hyperparameters
    spec = EnvSpec.from_env_id(cfg.settings.env, h.frame_stack)
    if resolve_extractor(spec, h.features_extractor) == "flatten":
        return None
    return {"frame_stack": h.frame_stack, "features_extractor": h.features_extractor}


def sb3_job(cfg: pearl.RunConfig) -> dict[str, Any]:
    """SB3's model for the config as plain values (``sb3_side``): zoo names map one to one."""
    h, name = cfg.hyperparameters, cfg.settings.algorithm
    job: dict[str, Any] = {"algorithm": name, "env": cfg.settings.env, "total_steps": cfg.settings.total_steps,
                           "n_envs": None, "noise_std": None, "activation_fn": None, "pearl_env": None,
                           "extractor": None}
    if name in ON_POLICY:
        kwargs = dict(learning_rate=plain(h.learning_rate), n_steps=h.n_steps, gamma=h.gamma,
                      gae_lambda=h.gae_lambda, ent_coef=h.ent_coef, vf_coef=h.vf_coef, max_grad_norm=h.max_grad_norm,
                      normalize_advantage=h.normalize_advantage, device="cpu",
                      policy_kwargs=dict(net_arch=dict(pi=list(h.net_arch), vf=list(h.net_arch)),
                                         ortho_init=h.ortho_init, log_std_init=h.log_std_init))
        if name == "ppo":
            kwargs.update(batch_size=h.batch_size, n_epochs=h.n_epochs, clip_range=plain(h.clip_range),
                          clip_range_vf=plain(h.clip_range_vf), target_kl=h.target_kl)
        else:
            kwargs.update(use_rms_prop=h.use_rms_prop, rms_prop_eps=h.rms_prop_eps)
        if name == "ppo" or not h.use_rms_prop:
            kwargs["policy_kwargs"]["optimizer_kwargs"] = dict(eps=h.adam_eps)
        return dict(job, policy=h.policy, n_envs=h.n_envs, activation_fn=h.activation_fn, kwargs=kwargs)
    kwargs = dict(learning_rate=plain(h.learning_rate), batch_size=h.batch_size, buffer_size=h.buffer_size,
                  learning_starts=h.learning_starts, gamma=h.gamma, tau=h.tau, train_freq=h.train_freq,
                  gradient_steps=h.gradient_steps,
                  policy_kwargs=dict(net_arch=list(h.net_arch), optimizer_kwargs=dict(eps=h.adam_eps)))
    job.update(pearl_env=env_of(cfg), extractor=extractor_of(cfg))
    if name == "dqn":
        kwargs.update(target_update_interval=h.target_update_interval, exploration_fraction=h.exploration_fraction,
                      exploration_final_eps=h.exploration_final_eps,
                      exploration_initial_eps=h.exploration_initial_eps, max_grad_norm=h.max_grad_norm)
        return dict(job, policy="MlpPolicy" if job["extractor"] is None else "CnnPolicy", kwargs=kwargs)
    if name == "sac":
        kwargs.update(ent_coef=h.ent_coef, target_entropy=h.target_entropy,
                      target_update_interval=h.target_update_interval)
        return dict(job, policy="MlpPolicy", kwargs=kwargs)
    if name == "td3":
        if h.target_interval != h.policy_delay:
            raise SystemExit(f"SB3's TD3 moves its targets with the actor (every policy_delay = {h.policy_delay} "
                             f"steps); this config sets target_update_interval {h.target_update_interval}")
        kwargs.update(policy_delay=h.policy_delay, target_policy_noise=h.target_policy_noise,
                      target_noise_clip=h.target_noise_clip)
    return dict(job, policy="MlpPolicy", noise_std=h.noise_std, kwargs=kwargs)


def run_serial(cfg: pearl.RunConfig, seed: int, args: argparse.Namespace) -> tuple[float, float]:
    import pearl_py as pearl

    algo = cfg.make_algorithm()
    plan = with_variant(pearl.Plan.single_device(algo.protocol(serialized=True)), args.variant, algo.family) \
        if args.variant else None
    result = pearl.train(algo, total_steps=cfg.settings.total_steps, seed=seed, plan=plan, progress=False,
                         eval_episodes=args.eval_episodes)
    return result.wall_seconds, result.eval_return_mean


def with_variant(chosen: pearl.Plan, variant: str, family: str = "off_policy") -> pearl.Plan:
    """``chosen`` with ``variant`` for the learner update, and for inference where ``family``'s kernels have one so
    named."""
    import pearl_py as pearl
    from pearl_py.kernels import registry_of

    for kernel in ("learner_update", "inference"):
        old = chosen.placements[kernel]
        if kernel == "learner_update" or variant in {v.name for v in registry_of(family).variants(kernel)}:
            chosen.placements[kernel] = pearl.Placement(old.device, variant, old.replicas)
    return chosen


def solved_plan(algo: pearl.Algorithm, args: argparse.Namespace, total_steps: int, one_process: bool) -> pearl.Plan:
    """The plan `pearl run --auto` solves for this machine, or reuses where an earlier run kept one (the run's
    length as the horizon, so variants with a one-off compile and the actors' start-up are weighed over the run; ``one_process``: a serialized plan may
    win, as in `pearl run --auto`; else the best parallel plan), or with ``--plan single`` all on the CPU."""
    import pearl_py as pearl

    if args.plan == "auto":
        from pearl_py.pipeline.planning import resolve_plan

        def said(line: str) -> None:   # of the planner's lines, only whether it reused a kept plan
            if line.startswith("plan reused"):
                print(f"     {line}", flush=True)

        # reuse: as `pearl run --auto` does, a later seed runs the plan the first one made (a plan has no seed)
        chosen = resolve_plan(algo, "auto", "throughput", log=said, total_steps=total_steps,
                              one_process=one_process, reuse=True)
    else:
        chosen = pearl.Plan.single_device(algo.protocol(serialized=one_process))
    if args.learner_threads:
        old = chosen.placements["learner_update"]
        chosen.placements["learner_update"] = pearl.Placement(old.device, old.variant, args.learner_threads)
    return with_variant(chosen, args.variant, algo.family) if args.variant else chosen


def run_planned(cfg: pearl.RunConfig, seed: int, args: argparse.Namespace, one_process: bool) -> tuple[float, float]:
    """pearl_py under :func:`solved_plan`, on the executor its mode names (as `pearl run` picks it)."""
    from pearl_py.pipeline.train import make_executor

    algo = cfg.make_algorithm()
    plan = solved_plan(algo, args, cfg.settings.total_steps, one_process)
    executor = make_executor(algo, plan, seed, progress=False, eval_episodes=args.eval_episodes)
    result = executor.run(cfg.settings.total_steps)
    learner = plan.placements["learner_update"]
    actors = result.layout.get("actors", "no")
    print(f"     {plan.mode} plan: learner {learner.variant} at {learner.replicas} thread(s), {actors} actor(s); "
          f"start-up {result.startup_seconds:.1f} s (measured)", flush=True)
    return result.wall_seconds, result.eval_return_mean


BACKENDS = {"serial": run_serial,
            "parallel": lambda cfg, seed, args: run_planned(cfg, seed, args, one_process=False),
            "auto": lambda cfg, seed, args: run_planned(cfg, seed, args, one_process=True)}
ON_POLICY = ("ppo", "a2c")
"""The configs' algorithms SB3 runs as on-policy models (:func:`sb3_job`)."""
SOLVED = {"CartPole-v1": 475.0, "Pendulum-v1": -200.0, "LunarLanderContinuous-v3": 200.0}
"""Eval return that counts as solved (issue 6's bar; LunarLander's own threshold), per env."""


def configured(config: str, steps: int | None, settings: list[str]) -> pearl.RunConfig:
    """The config with ``total_steps`` and ``KEY=VALUE`` hyperparameters overridden (values read as YAML)."""
    import pearl_py as pearl
    from pearl_py.run_config.overrides import apply_sets

    # the overrides first, then the steps: --set learning_starts=... may be what lets a short run train
    return apply_sets(pearl.load_config(config), settings).with_overrides(total_steps=steps)


def _in_child(queue: mp.Queue, backend: str, config: str, steps: int | None, seed: int,
              args: argparse.Namespace, job: dict[str, Any] | None) -> None:
    import torch

    torch.set_num_threads(args.sb3_threads if backend == "sb3" else 1)
    if backend == "sb3":
        wall, ret = sb3_side.run(job, seed, args.eval_episodes)
    else:
        wall, ret = BACKENDS[backend](configured(config, steps, args.set), seed, args)
    peak_kb = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    queue.put((wall, ret, peak_kb / 1024))


def measure(backend: str, seed: int, args: argparse.Namespace,
            job: dict[str, Any] | None) -> tuple[float, float, float, float]:
    """(training wall seconds, eval return, peak MiB of one process, whole-process wall seconds) of one
    backend, in a fresh process (SB3's gets its model as ``job``, :func:`sb3_job`)."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    start = time.perf_counter()
    proc = ctx.Process(target=_in_child, args=(queue, backend, args.config, args.steps, seed, args, job))
    proc.start()
    wall, ret, peak = queue.get()
    proc.join()
    return wall, ret, peak, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("config")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--steps", type=int, help="override total_steps (quick looks only)")
    parser.add_argument("--backends", nargs="+", choices=["sb3", *sorted(BACKENDS)], default=["sb3", "auto"])
    parser.add_argument("--plan", choices=["auto", "single"], default="auto",
                        help="plan of the auto and parallel backends (default: solved for this machine)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a hyperparameter for both backends (e.g. learning_starts=10000)")
    parser.add_argument("--eval-episodes", type=int, default=10,
                        help="greedy evaluation episodes after training (0: none, for throughput runs)")
    parser.add_argument("--solved", type=float, help="return that counts as solved (default: SOLVED by env)")
    parser.add_argument("--sb3-threads", type=int, default=1, help="torch threads of the SB3 process (default 1)")
    parser.add_argument("--variant", help="learner_update variant, and inference variant where one has this name, "
                             "for the pearl_py backends (default: the plan's)")
    parser.add_argument("--learner-threads", type=int, choices=[1, 2],
                        help="the auto and parallel backends' learner threads (default: the plan's), pinned as the runtime pins them")
    args = parser.parse_args()
    cfg = configured(args.config, args.steps, args.set)
    job = sb3_job(cfg) if "sb3" in args.backends else None
    print(f"{cfg.settings.algorithm} {cfg.settings.env}, {cfg.settings.total_steps} steps, {args.sb3_threads} torch "
          f"thread(s) for SB3, 1 per pearl_py process but the learner's (the plan's), each backend in a fresh process")
    print(f"{'seed':>4} {'backend':>9} {'wall s':>8} {'SB3/this':>8} {'return':>8} {'peak MiB':>9} {'process s':>9}")
    ratios: dict[str, list[float]] = {b: [] for b in args.backends}
    process_ratios: dict[str, list[float]] = {b: [] for b in args.backends}
    returns: dict[str, list[float]] = {b: [] for b in args.backends}
    for seed in args.seeds:
        walls, processes = {}, {}
        for backend in args.backends:
            wall, ret, peak, process = measure(backend, seed, args, job)
            walls[backend], processes[backend] = wall, process
            ratio = walls["sb3"] / wall if "sb3" in walls else float("nan")
            ratios[backend].append(ratio)
            process_ratios[backend].append(processes["sb3"] / process if "sb3" in processes else float("nan"))
            returns[backend].append(ret)
            print(f"{seed:>4} {backend:>9} {wall:8.1f} {ratio:8.2f} {ret:8.1f} {peak:9.0f} {process:9.1f}", flush=True)
    for backend in args.backends:
        if backend != "sb3" and "sb3" in args.backends:
            print(f"median ratio SB3/{backend}: whole process {np.median(process_ratios[backend]):.2f}, training "
                  f"{np.median(ratios[backend]):.2f} (measured; load {os.getloadavg()[0]:.2f})")
    solved = args.solved if args.solved is not None else SOLVED.get(cfg.settings.env)
    for backend, values in returns.items():
        reached = "" if solved is None else f"; {sum(r >= solved for r in values)}/{len(values)} seeds >= {solved:g}"
        print(f"{backend}: median final eval return {np.median(values):.1f}{reached} (measured)")


if __name__ == "__main__":
    main()
