"""The off-policy family: replay-based algorithms (DQN, DDPG, ...), their config, learner and protocol derivation."""
