"""Config machinery: YAML with line numbers and validated, documented dataclass fields.

The run config itself (algorithm + env + hyperparameters) is :mod:`pearl_py.run_config`.
"""
from pearl_py.config.fields import build, describe, param
from pearl_py.config.plain import plain_values
from pearl_py.config.yaml_source import YamlDocument

__all__ = ["YamlDocument", "build", "describe", "param", "plain_values"]
