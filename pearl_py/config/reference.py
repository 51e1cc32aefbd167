"""Render the config reference (docs/config.md) from the config dataclasses themselves.

Example::

    python -m pearl_py.config.reference > docs/config.md
"""
from __future__ import annotations

from pearl_py.config.fields import describe


def _value(default: object) -> str:
    if default is None:
        return "null"
    if isinstance(default, bool):
        return str(default).lower()
    if isinstance(default, tuple):
        return "[" + ", ".join(map(str, default)) + "]"
    return str(default)


def table(cls: type) -> str:
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    rows += [f"| `{name}` | {kind} | `{_value(default)}` | {doc} |" for name, kind, default, doc in describe(cls)]
    return "\n".join(rows)


def render() -> str:
    from pearl_py.algorithms import DDPGConfig, DQNConfig, SACConfig, TD3Config
    from pearl_py.run_config import RunSettings

    return "\n".join([
        "# Config reference",
        "",
        "Generated from the config dataclasses by `python -m pearl_py.config.reference`; a test keeps",
        "this page equal to the code. Hyperparameter names follow rl-baselines3-zoo; a key left out takes",
        "Stable-Baselines3's default for that algorithm. Unknown keys, wrong types and out-of-range values",
        "are errors that name `file:line: key` (CLI exit code 2).",
        "",
        "```yaml",
        "algorithm: dqn",
        "env: CartPole-v1",
        "total_steps: 50000",
        "seed: 0",
        "hyperparameters:",
        "  learning_rate: 2.3e-3",
        "  net_arch: [256, 256]",
        "```",
        "",
        "## Top level",
        "",
        table(RunSettings),
        "",
        "## `hyperparameters` for `algorithm: dqn`",
        "",
        table(DQNConfig),
        "",
        "## `hyperparameters` for `algorithm: ddpg`",
        "",
        table(DDPGConfig),
        "",
        "## `hyperparameters` for `algorithm: td3`",
        "",
        table(TD3Config),
        "",
        "## `hyperparameters` for `algorithm: sac`",
        "",
        table(SACConfig),
        "",
    ])


if __name__ == "__main__":
    print(render(), end="")
