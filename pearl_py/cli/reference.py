"""Render the config reference (docs/config.md) from the config dataclasses themselves.

Example::

    python -m pearl_py.cli.reference > docs/config.md
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
    """docs/config.md: the top-level keys, then the hyperparameters of every registered algorithm by name."""
    from pearl_py.algorithms import REGISTRY
    from pearl_py.run_config import RunSettings

    return "\n".join([
        "# Config reference",
        "",
        "Generated from the config dataclasses by `python -m pearl_py.cli.reference`; a test keeps",
        "this page equal to the code. Hyperparameter names follow rl-baselines3-zoo; a key left out takes",
        "Stable-Baselines3's default for that algorithm. Unknown keys, wrong types and out-of-range values",
        "are errors that name `file:line: key` (CLI exit code 2). Anchors, aliases and merge keys",
        "(`<<: *defaults`) read as YAML 1.1 defines them, in every file pearl_py reads; an error in a merged",
        "value names the line where the anchored mapping writes it.",
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
    ] + [line for name in REGISTRY for line in (
        f"## `hyperparameters` for `algorithm: {name}`", "", table(REGISTRY[name].Config), "")])


if __name__ == "__main__":
    print(render(), end="")
