"""Prioritized sampling matches the paper: frequencies follow priorities, IS weights follow the formula."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chisquare

import pearl_py as pearl
from pearl_py.replay import ReplayBuffer

from .helpers import transitions


@pytest.mark.parametrize("fanout", [2, 16])
def test_sampling_frequencies_match_priorities_chi_square(fanout):
    rng = np.random.default_rng(123)
    n_items, draws, batch = 300, 200_000, 1_000
    with ReplayBuffer(512, (4,), prioritized=True, alpha=0.7, fanout=fanout, seed=7) as buf:
        buf.add(*transitions(n_items))
        td = rng.exponential(1.0, n_items)
        td[::50] = 0.0                                       # eps keeps these drawable, just rarely
        buf.update_priorities(np.arange(n_items), td)
        counts = np.zeros(n_items)
        for _ in range(draws // batch):
            np.add.at(counts, buf.sample(batch).indices, 1)
    priorities = (td + 1e-6) ** 0.7
    expected = draws * priorities / priorities.sum()
    keep = expected >= 5                                     # chi-square validity; pool the rare ones
    observed = np.append(counts[keep], counts[~keep].sum())
    expected = np.append(expected[keep], expected[~keep].sum())
    assert counts.sum() == draws
    assert chisquare(observed, expected).pvalue > 1e-3


def test_uniform_sampling_frequencies_are_flat_chi_square():
    with ReplayBuffer(100, (4,), seed=11) as buf:
        buf.add(*transitions(60))
        counts = np.bincount(np.concatenate([buf.sample(1000).indices for _ in range(100)]), minlength=60)
    assert chisquare(counts).pvalue > 1e-3


@pytest.mark.parametrize("beta", [0.0, 0.4, 1.0])
@pytest.mark.parametrize("fanout", [2, 16])
def test_weights_are_exactly_the_papers_formula(beta, fanout):
    """w_i = (N * P(i))^-beta / max_j w_j with P(i) = p_i / sum_k p_k (Schaul et al. 2016, Alg. 1)."""
    rng = np.random.default_rng(0)
    with ReplayBuffer(64, (4,), prioritized=True, alpha=0.6, fanout=fanout, seed=3) as buf:
        buf.add(*transitions(40))
        td = rng.uniform(0, 5, 40)
        buf.update_priorities(np.arange(40), td)
        batch = buf.sample(128, beta=beta)
    p = (np.abs(td) + 1e-6) ** 0.6
    P = p / p.sum()
    N = 40
    w_all = (N * P) ** -beta
    expected = (N * P[batch.indices]) ** -beta / w_all.max()
    np.testing.assert_allclose(batch.weights, expected.astype(np.float32), rtol=1e-6)
    assert batch.weights.max() <= 1.0


def test_weights_use_the_minimum_over_stored_items_not_over_the_batch():
    with ReplayBuffer(8, (4,), prioritized=True, alpha=1.0, fanout=2, seed=0) as buf:
        buf.add(*transitions(4))
        buf.update_priorities(np.arange(4), np.array([1e-3, 100.0, 100.0, 100.0]))
        batch = buf.sample(3, beta=1.0)                    # stratified: the tiny item is ~never drawn
    assert 0 not in batch.indices.tolist()
    p_min = 1e-3 + 1e-6
    np.testing.assert_allclose(batch.weights, p_min / (100.0 + 1e-6), rtol=1e-6)


def test_overwritten_items_leave_the_min_tree():
    with ReplayBuffer(2, (4,), prioritized=True, alpha=1.0, seed=0) as buf:
        buf.add(*transitions(2))
        buf.update_priorities(np.array([0, 1]), np.array([0.001, 2.0]))
        buf.add(*transitions(1, start=2))                 # slot 0 now holds a new item at max priority
        assert buf._sampler.tree.min == pytest.approx(2.0 + 1e-6)
        np.testing.assert_allclose(buf.sample(4, beta=1.0).weights, 1.0)


def test_beta_anneals_linearly_and_clamps():
    algo = pearl.DQN("CartPole-v1", prioritized_replay=True, beta=0.4, beta_final=1.0)
    assert algo.beta_at(0.0) == 0.4
    assert algo.beta_at(0.25) == pytest.approx(0.55)
    assert algo.beta_at(3.0) == 1.0 and algo.beta_at(-1.0) == 0.4
