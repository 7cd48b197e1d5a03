"""R2CCP: regression as classification over a fine grid of score values."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from judgecp.base.errors import InputError, require
from judgecp.stats.conformal import ConformalMethod, FloatArray, MethodOptions, Prediction
from judgecp.stats.features import model_features

if TYPE_CHECKING:
    from typing_extensions import Unpack

#: Floor on grid probabilities before taking logs (keeps scores finite).
PROB_FLOOR = 1e-12


class R2CCP(ConformalMethod):
    """Conformal prediction via regression-as-classification, with the finite-sample quantile.

    As specified in the seed paper (appendix A.4): the range
    ``[min - 0.5, max + 0.5]`` is cut into a grid at ``resolution`` (0.125:
    41 points on 1..5); a small MLP (64 and 32 hidden units) maps the judge
    features to a softmax over the grid, trained on a ``fit_fraction`` part of
    the calibration split with cross-entropy against the nearest grid point
    (``loss="cross_entropy"``) or with Guha et al.'s distance-weighted,
    entropy-regularised loss (``loss="r2ccp"``). The score is
    ``-log p(grid point nearest y | x)``; the threshold is the
    ``ceil((n+1)(1-alpha))``-th smallest held-out score (the PyPI package
    omits this correction and calibrates on a hidden internal split). The
    interval is the hull of the grid cells whose score passes, so it contains
    every value the conformal set contains.

    Needs torch (``pip install judgecp[torch]``), imported only here.
    """

    name = "r2ccp"
    output = "interval"
    fits_model = True
    requires = (("torch", "torch"),)
    reference = "Guha, Natarajan, Möllenhoff, Khan & Ndiaye (2024), ICLR"

    def __init__(
        self,
        alpha: float = 0.1,
        *,
        resolution: float = 0.125,
        hidden: tuple[int, ...] = (64, 32),
        epochs: int = 30,
        batch_size: int = 256,
        learning_rate: float = 3e-3,
        weight_decay: float = 1e-4,
        loss: Literal["cross_entropy", "r2ccp"] = "cross_entropy",
        p: float = 0.5,
        tau: float = 0.2,
        init_seed: int = 42,
        **options: Unpack[MethodOptions],
    ) -> None:
        super().__init__(alpha, **options)
        if loss not in ("cross_entropy", "r2ccp"):
            raise InputError(f"r2ccp: loss must be 'cross_entropy' or 'r2ccp', got {loss!r}")
        self.resolution = resolution
        self.hidden = hidden
        self.epochs = epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.loss = loss
        self.p = p
        self.tau = tau
        self.init_seed = init_seed

    @property
    def grid(self) -> FloatArray:
        lo, hi = self.scale.minimum - 0.5, self.scale.maximum + 0.5
        n = round((hi - lo) / self.resolution) + 1
        return np.linspace(lo, hi, n)

    def _nearest(self, y: FloatArray) -> Any:
        g = self.grid
        return np.clip(np.round((y - g[0]) / self.resolution), 0, g.size - 1).astype(np.int64)

    def _fit(self, X: FloatArray, y: FloatArray) -> None:
        torch: Any = require("torch", "torch", "the r2ccp method")
        F = model_features(X, self.scale)
        self.mean_ = F.mean(axis=0)
        self.std_ = np.where(F.std(axis=0) > 1e-12, F.std(axis=0), 1.0)
        Z = torch.as_tensor((F - self.mean_) / self.std_, dtype=torch.float32)
        target = torch.as_tensor(self._nearest(y))
        grid = torch.as_tensor(self.grid, dtype=torch.float32)
        yt = torch.as_tensor(y, dtype=torch.float32)

        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # a tiny MLP: one thread is fastest and deterministic
        try:
            torch.manual_seed(self.init_seed)
            layers: list[Any] = []
            width = Z.shape[1]
            for h in self.hidden:
                layers += [torch.nn.Linear(width, h), torch.nn.ReLU()]
                width = h
            layers.append(torch.nn.Linear(width, self.grid.size))
            net = torch.nn.Sequential(*layers)
            opt = torch.optim.Adam(net.parameters(), lr=self.learning_rate, weight_decay=self.weight_decay)
            gen = torch.Generator().manual_seed(int(self._rng_.integers(2**31 - 1)))
            n = Z.shape[0]
            for _ in range(self.epochs):
                perm = torch.randperm(n, generator=gen)
                for start in range(0, n, self.batch_size):
                    idx = perm[start : start + self.batch_size]
                    logits = net(Z[idx])
                    if self.loss == "cross_entropy":
                        loss = torch.nn.functional.cross_entropy(logits, target[idx])
                    else:
                        q = torch.softmax(logits, dim=1)
                        dist = (yt[idx, None] - grid[None, :]).abs() ** self.p
                        entropy = -(q * torch.log(q.clamp_min(PROB_FLOOR))).sum(dim=1)
                        loss = ((dist * q).sum(dim=1) - self.tau * entropy).mean()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
            self.net_ = net.eval()
        finally:
            torch.set_num_threads(threads)

    def grid_scores(self, X: FloatArray) -> FloatArray:
        """``-log p(g | x)`` for every grid point g, ``(n, n_grid)``."""
        torch: Any = require("torch", "torch", "the r2ccp method")
        Z = (model_features(X, self.scale) - self.mean_) / self.std_
        with torch.no_grad():
            logp = torch.log_softmax(self.net_(torch.as_tensor(Z, dtype=torch.float32)), dim=1)
        scores: FloatArray = np.minimum(-logp.double().numpy(), -np.log(PROB_FLOOR))
        return scores

    def _conformalize(self, X: FloatArray, y: FloatArray) -> None:
        s = self.grid_scores(X)
        self.threshold_ = self._quantile(np.take_along_axis(s, self._nearest(y)[:, None], axis=1)[:, 0])

    def _predict(self, X: FloatArray, rng: np.random.Generator) -> Prediction:
        passing = self.grid_scores(X) <= self.threshold_ + 1e-10
        g = self.grid
        any_pass = passing.any(axis=1)
        first = np.argmax(passing, axis=1)
        last = g.size - 1 - np.argmax(passing[:, ::-1], axis=1)
        half = self.resolution / 2
        lower = np.where(any_pass, g[first] - half, np.nan)
        upper = np.where(any_pass, g[last] + half, np.nan)
        # An empty conformal set (nothing passes) is reported as an empty interval.
        lower = np.where(any_pass, lower, self.scale.maximum)
        upper = np.where(any_pass, upper, self.scale.minimum)
        return Prediction.from_interval(lower, upper, self.scale)

    complexity = ("epochs x fit rows (an MLP), O(n G) prediction over G grid points", "O(n G)")
