"""``wp.optim``: gradient-descent optimisers for differentiable simulations (Warp's ``Adam`` and
``SGD``: same constructor arguments, ``set_params``, ``reset_internal_state``, ``step(grad)``).

Parameters are arrays of floats or of float vectors/matrices (updated component by component);
each step is one kernel launch per parameter array, on the array's device.
"""

import functools

import tilewarp as wp  # the package is initialised before its submodules: kernels below call wp.tid() ...

from .language import types as T
from .api.kernel import kernel
from .runtime.array import array, zeros_like
from .runtime.launch import launch


def _flat(a: array) -> array:
    """The components of ``a`` as a 1-d array of its scalar type (a view: updates land in ``a``)."""
    scalar = T.scalar_of(a.dtype)
    if not T.is_float(scalar):
        raise TypeError(f"optimisers update float arrays, got an array of {T.type_name(a.dtype)}")
    if not a.is_contiguous:
        raise ValueError("optimisers update contiguous arrays")
    return (a.view(scalar) if scalar is not a.dtype else a).flatten()


@functools.lru_cache(maxsize=None)
def _adam_kernel(dtype):
    @kernel(module="unique")
    def adam_step(g: array(dtype=dtype), m: array(dtype=dtype), v: array(dtype=dtype), p: array(dtype=dtype),
                  lr: dtype, beta1: dtype, beta2: dtype, t: dtype, eps: dtype):
        i = wp.tid()
        m[i] = beta1 * m[i] + (1.0 - beta1) * g[i]
        v[i] = beta2 * v[i] + (1.0 - beta2) * g[i] * g[i]
        m_hat = m[i] / (1.0 - wp.pow(beta1, t))
        v_hat = v[i] / (1.0 - wp.pow(beta2, t))
        p[i] = p[i] - lr * m_hat / (wp.sqrt(v_hat) + eps)

    return adam_step


@functools.lru_cache(maxsize=None)
def _sgd_kernel(dtype):
    @kernel(module="unique")
    def sgd_step(g: array(dtype=dtype), b: array(dtype=dtype), p: array(dtype=dtype), lr: dtype,
                 momentum: dtype, dampening: dtype, weight_decay: dtype, nesterov: int, first: int):
        i = wp.tid()
        d = g[i] + weight_decay * p[i]
        if momentum != 0.0:
            if first != 0:
                b[i] = d
            else:
                b[i] = momentum * b[i] + (1.0 - dampening) * d
            if nesterov != 0:
                d = d + momentum * b[i]
            else:
                d = b[i]
        p[i] = p[i] - lr * d

    return sgd_step


class _Optimizer:
    def __init__(self, params):
        self.params: list = []
        if params is not None:
            self.set_params(params)

    def set_params(self, params):
        self.params = list(params)
        self._flat = [_flat(p) for p in self.params]
        self.reset_internal_state()

    def _check(self, grad):
        grad = list(grad)
        if len(grad) != len(self.params):
            raise ValueError(f"step() takes one gradient per parameter array ({len(self.params)}), got {len(grad)}")
        flat = []
        for k, (g, p) in enumerate(zip(grad, self.params)):
            if not isinstance(g, array) or g.shape != p.shape or g.dtype != p.dtype:
                got = f"{T.type_name(g.dtype)} {g.shape}" if isinstance(g, array) else type(g).__name__
                raise ValueError(f"gradient {k} must be an array of {T.type_name(p.dtype)} {p.shape}, got {got}")
            flat.append(_flat(g))
        return flat


class Adam(_Optimizer):
    """Adam with bias correction (Kingma and Ba), as Warp's and PyTorch's."""

    def __init__(self, params=None, lr=0.001, betas=(0.9, 0.999), eps=1e-08):
        self.lr, self.beta1, self.beta2, self.eps = lr, betas[0], betas[1], eps
        super().__init__(params)

    def reset_internal_state(self):
        self.m = [zeros_like(f) for f in self._flat]
        self.v = [zeros_like(f) for f in self._flat]
        self.t = 0

    def step(self, grad):
        flat = self._check(grad)
        self.t += 1
        for g, m, v, p in zip(flat, self.m, self.v, self._flat):
            scalar = p.dtype
            launch(_adam_kernel(scalar), dim=p.size, device=p.device,
                   inputs=[g, m, v, p, *(scalar(x) for x in (self.lr, self.beta1, self.beta2, self.t, self.eps))])


class SGD(_Optimizer):
    """Stochastic gradient descent with momentum, dampening, weight decay and Nesterov momentum, as
    Warp's and PyTorch's."""

    def __init__(self, params=None, lr=0.001, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
        self.lr, self.momentum, self.dampening = lr, momentum, dampening
        self.weight_decay, self.nesterov = weight_decay, nesterov
        super().__init__(params)

    def reset_internal_state(self):
        self.b = [zeros_like(f) for f in self._flat]
        self.t = 0

    def step(self, grad):
        flat = self._check(grad)
        first = int(self.t == 0)
        self.t += 1
        for g, b, p in zip(flat, self.b, self._flat):
            scalar = p.dtype
            values = (scalar(x) for x in (self.lr, self.momentum, self.dampening, self.weight_decay))
            launch(_sgd_kernel(scalar), dim=p.size, device=p.device,
                   inputs=[g, b, p, *values, int(self.nesterov), first])
