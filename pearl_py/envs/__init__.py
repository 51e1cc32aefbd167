"""The envs room: env families, making one env, what an algorithm knows of it (:class:`EnvSpec`), the vector env
and its autoreset contract, normalization, the zoo's Atari preprocessing and true episodes (one module each).

Example::

    >>> from pearl_py.envs import EnvSpec
    >>> EnvSpec.from_env_id("CartPole-v1").obs_dim
    4
"""
from pearl_py.envs.families import EnvError, EnvNotInstalled
from pearl_py.envs.kwargs import EnvKwargs
from pearl_py.envs.make import make_env
from pearl_py.envs.spec import EnvSpec, check_env_id
from pearl_py.envs.envpool_vector import make_envpool_vector_env
from pearl_py.envs.vector import make_native_vector_env, make_vector_env, native_vector_reason

__all__ = ["EnvError", "EnvKwargs", "EnvNotInstalled", "EnvSpec", "check_env_id", "make_env", "make_envpool_vector_env",
           "make_native_vector_env", "make_vector_env", "native_vector_reason"]
