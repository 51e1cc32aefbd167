"""Threads as a planned resource of the learner update: the optimizer gives the learner a second thread
where its calibrated latency pays and a core is free of actors, the plan records it, the report says why."""
from __future__ import annotations

import dataclasses

import pytest

import pearl_py as pearl
from pearl_py.estimate import Calibration, Estimator
from pearl_py.estimate.calibration import model_key
from pearl_py.estimate.fit import FittedModel
from pearl_py.optimize.api import plan
from pearl_py.optimize.exhaustive import solve_exhaustive
from pearl_py.optimize.milp import solve_milp
from pearl_py.optimize.model import Choice, evaluate
from pearl_py.optimize.problem import AssignmentProblem, Device, Option, Task
from pearl_py.optimize.solve import solve
from pearl_py.plan import Plan
from pearl_py.platform import Platform
from pearl_py.report import content, fmt, measured
from pearl_py.runtime.parallel.placement import RuntimeLayout
from pearl_py.simulate import SimSchedule, simulate

NET = ("flops", "bytes", "ops")


def two_stage(act_s: float, one_thread_s: float, two_threads_s: float) -> AssignmentProblem:
    """An actor kernel (replicable) and a learner (threaded) on one 2-core CPU."""
    return AssignmentProblem(
        tasks=(Task("act", rate=1.0, replicable=True, stage="act"), Task("learn", rate=1.0, stage="train")),
        devices={"cpu": Device("cpu", "cpu", units=2, idle_w=10.0, peak_w=50.0)},
        options={("act", "cpu", "reference"): Option(act_s, 1e-3),
                 ("learn", "cpu", "reference"): Option(one_thread_s, 1e-2, threads=((two_threads_s, 1.5e-2),))})


def chosen(problem: AssignmentProblem) -> list[dict[str, Choice]]:
    """The plan of every solver (auto, exhaustive, MILP)."""
    return [dict(s.assignment) for s in (solve(problem), solve_exhaustive(problem, "throughput"),
                                         solve_milp(problem, "throughput"))]


def test_two_threads_when_they_pay_and_the_actor_needs_little():
    for assignment in chosen(two_stage(act_s=30e-6, one_thread_s=6.8e-3, two_threads_s=4.2e-3)):
        assert assignment == {"act": Choice("cpu", "reference", 1), "learn": Choice("cpu", "reference", 2)}


def test_one_thread_when_the_actors_need_the_core():
    # 2 actor processes halve 20 ms of acting; the learner's second thread would save only 2.6 ms
    for assignment in chosen(two_stage(act_s=20e-3, one_thread_s=6.8e-3, two_threads_s=4.2e-3)):
        assert assignment == {"act": Choice("cpu", "reference", 2), "learn": Choice("cpu", "reference", 1)}


def test_one_thread_when_two_are_no_faster():
    for assignment in chosen(two_stage(act_s=30e-6, one_thread_s=6.8e-3, two_threads_s=7.5e-3)):
        assert assignment["learn"] == Choice("cpu", "reference", 1)


def test_threads_are_charged_at_their_latency_and_take_free_cores():
    problem = two_stage(act_s=30e-6, one_thread_s=6.8e-3, two_threads_s=4.2e-3)
    two = evaluate(problem, {"act": Choice("cpu"), "learn": Choice("cpu", replicas=2)})
    assert two.feasible and two.time_per_sample == pytest.approx(30e-6 + 4.2e-3)
    assert two.dynamic_j == pytest.approx(1e-3 + 1.5e-2)
    crowded = evaluate(problem, {"act": Choice("cpu", replicas=2), "learn": Choice("cpu", replicas=2)})
    assert crowded.violations == ["device 'cpu': 1 extra thread(s) beside 2 actor core(s) on 2 units"]
    assert "3 threads" in evaluate(problem, {"act": Choice("cpu"), "learn": Choice("cpu", replicas=3)}).violations[0]


def test_the_actor_and_a_one_thread_learner_run_side_by_side_on_two_cores():
    problem = two_stage(act_s=40e-6, one_thread_s=25e-6, two_threads_s=20e-6)
    side_by_side = evaluate(problem, {"act": Choice("cpu"), "learn": Choice("cpu")})
    assert side_by_side.time_per_sample == pytest.approx(40e-6)          # the actor's process sets the pace
    assert side_by_side.utilization["cpu"] == pytest.approx(65 / 80)     # 65 us of work on 2 cores for 40 us
    # two actors and the learner: three processes time-share two cores
    shared = evaluate(problem, {"act": Choice("cpu", replicas=2), "learn": Choice("cpu")})
    assert shared.time_per_sample == pytest.approx((40e-6 + 25e-6) / 2)
    # the learner's second thread shares the actor's core: everything in series
    crowded = evaluate(problem, {"act": Choice("cpu"), "learn": Choice("cpu", replicas=2)})
    assert crowded.time_per_sample == pytest.approx(40e-6 + 20e-6)
    for assignment in chosen(problem):
        assert assignment == {"act": Choice("cpu", "reference", 2), "learn": Choice("cpu", "reference", 1)}
    one_core = dataclasses.replace(problem, devices={"cpu": Device("cpu", "cpu", units=1, idle_w=10.0, peak_w=50.0)})
    assert evaluate(one_core, {"act": Choice("cpu"), "learn": Choice("cpu")}).time_per_sample == pytest.approx(65e-6)


def with_pooled_actor(problem: AssignmentProblem, act_s: float) -> AssignmentProblem:
    """``problem`` with the actor kernel also offered as ``envpool_t2``: a call of ``act_s`` holding 2 cores (an env
    backend's two worker threads)."""
    return dataclasses.replace(problem, options={**problem.options,
                                                 ("act", "cpu", "envpool_t2"): Option(act_s, 1e-3, cores=2)})


def test_an_env_backends_worker_threads_are_charged_as_cores_like_the_learners():
    problem = with_pooled_actor(two_stage(act_s=40e-6, one_thread_s=6.8e-3, two_threads_s=4.2e-3), act_s=10e-6)
    assert problem.cores("act", "cpu", "envpool_t2", 1) == 2 and problem.cores("act", "cpu", "reference", 1) == 1
    assert problem.cores("learn", "cpu", "reference", 2) == 2
    assert list(problem.replica_choices("act", "cpu", "envpool_t2")) == [1]     # one 2-core replica fits 2 cores
    pooled = {"act": Choice("cpu", "envpool_t2")}
    crowded = evaluate(problem, {**pooled, "learn": Choice("cpu", replicas=2)})
    assert crowded.violations == ["device 'cpu': 1 extra thread(s) beside 2 actor core(s) on 2 units"]
    # beside a one-thread learner its 2 cores are work: (2 x 10 us + 6.8 ms) over 2 cores, under the learner's 6.8 ms
    beside = evaluate(problem, {**pooled, "learn": Choice("cpu")})
    assert beside.feasible and beside.time_per_sample == pytest.approx(6.8e-3)
    assert beside.utilization["cpu"] == pytest.approx((2 * 10e-6 + 6.8e-3) / 2 / 6.8e-3)
    from pearl_py.optimize.explain import thread_sentences
    (why,) = thread_sentences(problem, {**pooled, "learn": Choice("cpu")}, beside, "throughput")
    assert "but the 1 actor process(es) hold 2 of the 2 cores" in why
    # uncharged, the pooled actor beside the 2-thread learner (4.21 ms in series) would beat the reference's 4.24 ms:
    # every solver takes the reference actor and the learner's 2 threads instead
    for assignment in chosen(problem):
        assert assignment == {"act": Choice("cpu", "reference", 1), "learn": Choice("cpu", "reference", 2)}
    two_pooled = evaluate(problem, {"act": Choice("cpu", "envpool_t2", replicas=2), "learn": Choice("cpu")})
    assert two_pooled.violations == ["kernel 'act': 2 replicas on 'cpu'"]


def test_a_serialized_plan_runs_everything_in_turn_on_any_cores():
    problem = dataclasses.replace(two_stage(act_s=40e-6, one_thread_s=25e-6, two_threads_s=20e-6), serialized=True)
    assert evaluate(problem, {"act": Choice("cpu"), "learn": Choice("cpu")}).time_per_sample == pytest.approx(65e-6)


def test_a_replicable_kernel_cannot_be_threaded():
    with pytest.raises(ValueError, match="replicable kernel cannot also be threaded"):
        AssignmentProblem(tasks=(Task("act", 1.0, replicable=True),), devices={"cpu": Device("cpu", "cpu", 2, 1, 2)},
                          options={("act", "cpu", "reference"): Option(1e-3, threads=((5e-4, 0.0),))})


# -- through the estimator, on this machine's CPU with two cores --------------------------------------


def calibration(threaded: bool) -> Calibration:
    """The learner's fused update 2 ms + 10 ns/FLOP at one thread, 1.5 ms + 6 ns/FLOP at two; actors cheap."""
    models = {model_key("learner_update", "reference"): FittedModel("linear", NET, (3e-3, 1.2e-11, 0, 0), "flops"),
              model_key("learner_update", "fused"): FittedModel("linear", NET, (2e-3, 1e-11, 0, 0), "flops"),
              model_key("inference", "reference"): FittedModel("linear", NET, (20e-6, 0, 0, 0), "flops"),
              model_key("env_step", "reference", "Pendulum-v1"): FittedModel("linear", ("n_envs",), (20e-6, 0), "n_envs")}
    if threaded:
        models[model_key("learner_update", "fused", threads=2)] = FittedModel("linear", NET, (1.5e-3, 6e-12, 0, 0),
                                                                              "flops")
    return Calibration("test", models)


@pytest.fixture(scope="module")
def two_cores() -> Platform:
    local = Platform.local()
    cpu = local.device("cpu")
    return dataclasses.replace(local, devices={**local.devices, "cpu": dataclasses.replace(
        cpu, spec=dataclasses.replace(cpu.spec, cores=2))})


def ddpg_plan(platform: Platform, threaded: bool) -> Plan:
    return plan(pearl.DDPG("Pendulum-v1"), platform, estimator=Estimator(calibration(threaded)))


def test_the_plan_gives_the_learner_two_threads_and_says_why(two_cores, tmp_path):
    p = ddpg_plan(two_cores, threaded=True)
    learner = p.placements["learner_update"]
    assert (learner.variant, learner.replicas, p.learner_threads) == ("fused", 2, 2)
    assert p.placements["env_step"].replicas == 1
    (sentence,) = p.prediction.threads
    assert sentence.startswith("learner_update runs 2 threads on cpu: ") and "at 1 thread (calibrated)" in sentence
    two_threads = p.prediction.costs["learner_update"]["cpu"]["fused"].threads[0]
    assert two_threads.threads == 2 and content.placed_cost(p, "learner_update").latency_s == two_threads.latency_s
    # the update alone, in every table; the loop's work that comes with it is the loop row's
    loop_s = content.placed_cost(p, "learner_update").loop_s
    row = next(r for r in content.assignment_rows(p) if r[0] == "learner_update")
    assert row[3] == "2 threads" and row[5] == fmt.seconds(two_threads.latency_s - loop_s)
    run = {"env_steps": 100, "kernel_times": {"learner_update": {"mean_s": 4e-3, "total_s": 0.4, "calls": 100}}}
    measured_row = next(r for r in measured.kernel_rows(p, run) if r[0] == "learner_update")
    assert measured_row[2] == f"{fmt.seconds(two_threads.latency_s - loop_s)} (calibrated)"
    assert sentence in content.choice_sentences(p)
    # the plan file keeps it, and the runtime reads it
    pearl.export_plan(p, tmp_path)
    for loaded in (pearl.load_plan(tmp_path / "plan.yaml"), Plan.from_dict(p.to_dict())):
        assert loaded.placements == p.placements and loaded.learner_threads == 2
        assert RuntimeLayout.from_plan(loaded).learner_threads == 2
        assert RuntimeLayout.from_plan(loaded).describe()["learner_threads"] == 2


def test_a_calibration_without_threaded_models_plans_one_thread_and_says_so(two_cores):
    p = ddpg_plan(two_cores, threaded=False)
    assert p.placements["learner_update"].replicas == 1 and p.prediction.threads == ()
    assert any("one thread only on cpu" in note and "pearl profile" in note
               for note in content.variant_notes(p))


def test_old_plan_files_run_one_learner_thread():
    old = {"platform": "local", "objective": "throughput", "placements": {
        k: {"device": "cpu", "variant": "reference", "replicas": 1}
        for k in ("env_step", "inference", "replay_insert", "replay_sample", "learner_update", "param_sync")}}
    assert Plan.from_dict(old).learner_threads == 1
    assert RuntimeLayout.from_plan(Plan.from_dict(old)).learner_threads == 1


def test_the_simulator_holds_both_cores_for_a_two_thread_update(two_cores):
    from pearl_py.optimize.builder import build_problem

    algo = pearl.DDPG("Pendulum-v1")
    problem = build_problem(algo.protocol(), two_cores, Estimator(calibration(threaded=True)))
    solution = solve(problem)
    assert solution.assignment["learner_update"].replicas == 2
    sim = simulate(problem, solution.assignment, SimSchedule.from_config(algo.config, 3000), trace=False)
    # acting and the two-thread update cannot overlap (it holds both cores): the model's sum is the rate
    assert sim.samples_per_s == pytest.approx(solution.performance.samples_per_s, rel=0.05)


def test_the_explanation_names_what_binds_a_cpu_of_several_cores():
    from pearl_py.optimize.explain import limit_sentence

    def sentence(problem, assignment):
        return limit_sentence(problem, assignment, evaluate(problem, assignment))

    learner_bound = two_stage(act_s=10e-6, one_thread_s=50e-6, two_threads_s=45e-6)
    text = sentence(learner_bound, {"act": Choice("cpu"), "learn": Choice("cpu")})
    assert "the process running learn in turn sets the pace" in text and "50.0 us" in text
    busy = two_stage(act_s=40e-6, one_thread_s=25e-6, two_threads_s=20e-6)
    assert "all 2 cores are busy" in sentence(busy, {"act": Choice("cpu", replicas=2), "learn": Choice("cpu")})
    assert "more cores for act" in sentence(busy, {"act": Choice("cpu"), "learn": Choice("cpu")})
    crowded = sentence(busy, {"act": Choice("cpu"), "learn": Choice("cpu", replicas=2)})
    assert "the threads of learn share the actors' cores" in crowded and "one thread (a core each" in crowded
    paying = two_stage(act_s=30e-6, one_thread_s=6.8e-3, two_threads_s=4.2e-3)
    plan = {"act": Choice("cpu"), "learn": Choice("cpu", replicas=2)}
    assert "a CPU with more cores" in sentence(paying, plan) and "one thread would be slower" in sentence(paying, plan)
    from pearl_py.optimize.explain import thread_sentences
    assert "its threads share the cores of the 1 actor process(es)" in \
        thread_sentences(paying, plan, evaluate(paying, plan), "throughput")[0]
