"""``ExponentialFamily`` (PyTorch's ``torch.distributions.exp_family``): the base class of the
families with densities p(x; theta) = exp(<t(x), theta> - F(theta) + k(x)), theta the
natural parameters, F the log normaliser, k the carrier measure.

    entropy  H = F(theta) - <theta, grad F(theta)> - E[k(x)]
    KL(p || q) of one family = F(theta_q) - F(theta_p) - <theta_q - theta_p, grad F(theta_p)>
             (the Bregman divergence of F; the ExponentialFamily pair's fallback in kl.py)

grad F is taken by autograd (create_graph, so both stay differentiable). A subclass defines
``_natural_params`` (a tuple of tensors), ``_log_normalizer(*natural_params)`` and
``_mean_carrier_measure``; Bernoulli, Beta, ContinuousBernoulli, Dirichlet, Exponential,
Gamma (and Chi2), Normal and Poisson are ExponentialFamily subclasses, as in PyTorch.
"""

from __future__ import annotations

from tgrad.autograd import grad
from tgrad.autograd.grad_mode import enable_grad
from tgrad.distributions.distribution import Distribution
from tgrad.tensor import Tensor

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """A distribution of an exponential family (entropy by the Bregman divergence of its
    log normaliser)."""

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        """The natural parameters theta (a tuple of tensors)."""
        raise NotImplementedError

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        """F(theta), of the batch shape."""
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self) -> float:
        """E[k(x)]."""
        raise NotImplementedError

    def _bregman_terms(self) -> tuple[list[Tensor], Tensor, tuple[Tensor, ...]]:
        """(theta detached as new leaves, F(theta), grad F(theta)) with the graph kept."""
        with enable_grad():
            nparams = [p.detach().requires_grad_() for p in self._natural_params]
            lg_normal = self._log_normalizer(*nparams)
            gradients = grad(lg_normal.sum(), nparams, create_graph=True)
        return nparams, lg_normal, gradients

    def entropy(self) -> Tensor:
        """F(theta) - <theta, grad F(theta)> - E[k(x)] (its gradient flows to the detached
        natural parameters, not to the distribution's own, as PyTorch)."""
        nparams, lg_normal, gradients = self._bregman_terms()
        result = lg_normal - self._mean_carrier_measure
        for p, g in zip(nparams, gradients):
            result = result - (p * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
