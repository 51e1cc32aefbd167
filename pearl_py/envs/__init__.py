"""The envs room: env families (:mod:`.families`), making one env (:mod:`.make`), what an algorithm knows of it
(:mod:`.spec`), the vector env and its autoreset contract (:mod:`.vector`), observation/reward normalization
(:mod:`.normalize`), the zoo's Atari preprocessing (:mod:`.atari`), and true episodes where an env's episodes are
parts of one (:mod:`.episodes`).

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
