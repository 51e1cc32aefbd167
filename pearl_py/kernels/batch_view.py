"""A sampled batch's tensors as numba arrays over their own memory (no copy), for the fused learner kernels.

The Python side passes the addresses of the batch tensors (``tensor.data_ptr()``, cheaper than
``tensor.numpy()``); inside ``@njit`` code :func:`batch_arrays` views them as arrays of the batch's shapes.

Example (inside ``@njit`` code)::

    obs, rewards, next_obs, dones, weights = batch_arrays(B, n_obs, fields)
    actions = carray(f32_at(fields[1]), (B, n_act))
"""
from __future__ import annotations

from pearl_py.kernels.numba_blas import JIT, numba

if numba is not None:
    from numba import carray, njit, types
    from numba.extending import intrinsic

    def _pointer_at(element):
        """An intrinsic: ``element*`` at an integer address (a torch tensor's ``data_ptr()``)."""
        ptr = types.CPointer(element)

        @intrinsic
        def at(typingctx, address):
            def codegen(context, builder, sig, args):
                return builder.inttoptr(args[0], context.get_value_type(ptr))
            return ptr(address), codegen
        return at

    f32_at = _pointer_at(types.float32)
    i64_at = _pointer_at(types.int64)

    @njit(**JIT)
    def batch_arrays(B, n_obs, fields):
        """obs, rewards, next_obs, dones, weights: float32 arrays over the batch tensors' memory (``fields``:
        addresses of obs, actions, rewards, next_obs, dones, weights; actions are the algorithm's)."""
        a_obs, _, a_rew, a_next, a_done, a_w = fields
        return (carray(f32_at(a_obs), (B, n_obs)), carray(f32_at(a_rew), B), carray(f32_at(a_next), (B, n_obs)),
                carray(f32_at(a_done), B), carray(f32_at(a_w), B))
