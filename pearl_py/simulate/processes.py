"""The simulated processes: actors, the replay server and the learner, as generator bodies.

Actors claim vector steps from the rate limiter; the replay runs in the learner's process when it shares the
learner's device, else as a server process of its own that samples ``PREFETCH`` batches ahead; the learner
publishes parameters as the parallel runtime does (``TrainSchedule.params_needed``), then copies them to every
device that runs inference (docs/simulator.md, "What is simulated").

Example::

    >>> engine.process(actor(pipeline, 0)); engine.process(learner_with_replay(pipeline))
    >>> engine.run()
"""
from __future__ import annotations

from pearl_py.protocol.kernel import (
    ENV_STEP,
    INFERENCE,
    LEARNER_UPDATE,
    PARAM_SYNC,
    PRIORITY_UPDATE,
    REPLAY_INSERT,
    REPLAY_SAMPLE,
)
from pearl_py.simulate.engine import Process
from pearl_py.simulate.pipeline import Pipeline

PREFETCH = 2
"""Batches the replay server samples ahead of the learner."""


def actor(p: Pipeline, index: int) -> Process:
    env_dev, inf_dev = p.topo.actor_devices(index)
    replay_dev = p.topo.device(REPLAY_INSERT)
    while True:
        ticket = p.limiter.claim()
        if ticket is None:
            return
        yield ticket
        yield from p.transfer(env_dev, inf_dev, ENV_STEP, INFERENCE)
        yield p.call(INFERENCE, inf_dev)
        yield from p.transfer(inf_dev, env_dev, INFERENCE, ENV_STEP)
        yield p.call(ENV_STEP, env_dev)
        p.send(env_dev, replay_dev, ENV_STEP, REPLAY_INSERT, p.transition_arrived)


def learner_with_replay(p: Pipeline) -> Process:
    """The parallel runtime's learner loop, with the replay in the same process."""
    s, topo = p.schedule, p.topo
    dev, sample_dev = topo.device(LEARNER_UPDATE), topo.device(REPLAY_SAMPLE)
    insert_dev = topo.device(REPLAY_INSERT)
    prio_dev = topo.device(PRIORITY_UPDATE) if topo.has(PRIORITY_UPDATE) else None
    while True:
        due = s.updates_until(p.inserted)
        while p.updates_done < due:
            yield p.call(REPLAY_SAMPLE, sample_dev)
            yield from p.transfer(sample_dev, dev, REPLAY_SAMPLE, LEARNER_UPDATE)
            yield p.call(LEARNER_UPDATE, dev)
            if prio_dev is not None:
                yield from p.transfer(dev, prio_dev, LEARNER_UPDATE, PRIORITY_UPDATE)
                yield p.call(PRIORITY_UPDATE, prio_dev)
            yield from _after_update(p, dev)
        if p.inserted >= s.vector_steps:
            break
        target = s.next_round(p.inserted)
        while p.inserted < target:
            while p.arrived <= p.inserted:
                yield p.work.wait()
            yield p.call(REPLAY_INSERT, insert_dev)
            p.stored()
    p.end_s = p.engine.now


def replay_server(p: Pipeline) -> Process:
    """Inserts, samples ahead and applies priority updates, on the replay's device(s)."""
    s, topo = p.schedule, p.topo
    insert_dev, sample_dev = topo.device(REPLAY_INSERT), topo.device(REPLAY_SAMPLE)
    prio_dev = topo.device(PRIORITY_UPDATE) if topo.has(PRIORITY_UPDATE) else None
    learner_dev = topo.device(LEARNER_UPDATE)
    behind = s.lookahead_rounds * s.train_freq
    while True:
        if p.priorities_pending and prio_dev is not None:
            p.priorities_pending -= 1
            yield p.call(PRIORITY_UPDATE, prio_dev)
        elif p.sampled < min(s.updates_until(p.inserted), p.updates_done + PREFETCH):
            p.sampled += 1
            yield p.call(REPLAY_SAMPLE, sample_dev)
            p.send(sample_dev, learner_dev, REPLAY_SAMPLE, LEARNER_UPDATE, p.batch_arrived)
        elif p.arrived > p.inserted and p.updates_done >= s.updates_until(p.inserted + 1 - behind):
            yield p.call(REPLAY_INSERT, insert_dev)
            p.stored()
            if p.inserted >= s.vector_steps:
                p.end_s = max(p.end_s, p.engine.now)
        else:
            yield p.work.wait()


def learner(p: Pipeline) -> Process:
    """Trains on the batches the replay server sends; ships priorities back."""
    s, topo = p.schedule, p.topo
    dev = topo.device(LEARNER_UPDATE)
    prio_dev = topo.device(PRIORITY_UPDATE) if topo.has(PRIORITY_UPDATE) else None
    while p.updates_done < s.total_updates:
        while not p.batches_ready:
            yield p.learner_wake.wait()
        p.batches_ready -= 1
        yield p.call(LEARNER_UPDATE, dev)
        if prio_dev is not None:
            p.send(dev, prio_dev, LEARNER_UPDATE, PRIORITY_UPDATE, p.priorities_arrived)
        yield from _after_update(p, dev)
        p.work.notify()
    p.end_s = max(p.end_s, p.engine.now)


def _after_update(p: Pipeline, dev: str) -> Process:
    """Count the update, publish parameters when due, mark the end of a round."""
    s, topo = p.schedule, p.topo
    p.updates_done += 1
    p.limiter.updated(p.updates_done)
    if topo.has(PARAM_SYNC):
        sync_dev = topo.device(PARAM_SYNC)
        p.send(dev, sync_dev, LEARNER_UPDATE, PARAM_SYNC)
        if p.updates_done % s.sync_every == 0 or p.published < s.params_needed(p.limiter.allowed * s.n_envs):
            p.published = p.updates_done  # the runtime's rule: every sync_every updates, and where the lag needs it
            if sync_dev == dev:
                yield p.call(PARAM_SYNC, dev)
                _broadcast(p, dev)
            else:
                p.engine.process(_publish(p, sync_dev))
    if s.gradient_steps and p.updates_done % s.gradient_steps == 0:
        p.mark_round()


def _publish(p: Pipeline, sync_dev: str) -> Process:
    yield p.call(PARAM_SYNC, sync_dev)
    _broadcast(p, sync_dev)


def _broadcast(p: Pipeline, sync_dev: str) -> None:
    for member in p.topo.members(INFERENCE):
        p.send(sync_dev, member, PARAM_SYNC, INFERENCE)
