"""The gated diagonal linear RNN of Eq. (2), arXiv:2309.01775v2: the student.

Glossary (code name -> paper symbol -> shape):
    x_tilde  x~_t = [x_t; 1], the input with a constant 1 appended (no biases)       (d+1)
    W_in1    first input-gating matrix W_in1                                           (n, d+1)
    W_in2    second input-gating matrix W_in2                                          (n, d+1)
    u        g_in(x~_t) = (W_in1 x~_t) * (W_in2 x~_t), input gating                    (n)
    nu       lam = exp(-exp(nu)), the LRU-style parametrisation of the recurrence      (n)
    lam      lambda, the diagonal recurrence: h_t = lam * h_{t-1} + u_t, h_0 = 0       (n)
    W_out1   first output-gating matrix W_out1                                         (m, n)
    W_out2   second output-gating matrix W_out2                                        (m, n)
    D        readout: y_t = D g_out(h_t), g_out(h) = (W_out1 h) * (W_out2 h)           (d_out, m)
    W_side   side gating of App. A.2, instead of output gating:
             y_t = D ((W_side x~_t) * h_t), W_side (n, d+1), D (d_out, n)

Forms: "reference" loops over t (the definition); "parallel" computes h_t = sum_{s<=t}
lam^(t-s) u_s for all t with the decay matrix L[t, s] = lam^(t-s), exact and cheap for T <= 33.
``gated_rnn_forward`` takes parameters with any leading ensemble dims *E; ``GatedRNN`` wraps it.
"""

from __future__ import annotations

import math

import torch
from torch import nn

#: |nu| is clamped to NU_MAX: exp(-exp(-40)) == 1.0 and exp(-exp(40)) == 0.0 exactly, in float32
#: and float64, so lam can be set *exactly* to 1 or 0 with finite gradients everywhere.
NU_MAX = 40.0


def lam_from_nu(nu: torch.Tensor) -> torch.Tensor:
    """lam = exp(-exp(nu)), in [0, 1]; nu = -inf/+inf (or beyond +-NU_MAX) gives exactly 1/0."""
    return torch.exp(-torch.exp(nu.clamp(-NU_MAX, NU_MAX)))


def nu_from_lam(lam: torch.Tensor) -> torch.Tensor:
    """The inverse of ``lam_from_nu``; lam = 1 maps to -NU_MAX and lam = 0 to +NU_MAX."""
    lam = torch.as_tensor(lam)
    if torch.any((lam < 0) | (lam > 1)) or torch.any(torch.isnan(lam)):
        raise ValueError("lam must lie in [0, 1]")
    with torch.no_grad():
        nu = torch.log(-torch.log(lam.clamp(0.0, 1.0)))
    return nu.clamp(-NU_MAX, NU_MAX)


def input_gating(x: torch.Tensor, W_in1: torch.Tensor, W_in2: torch.Tensor) -> torch.Tensor:
    """g_in(x~) = (W_in1 x~) * (W_in2 x~) for x (*E, B, T, d) -> (*E, B, T, n)."""
    W1, b1 = W_in1[..., :-1], W_in1[..., -1]  # the last column reads the constant 1
    W2, b2 = W_in2[..., :-1], W_in2[..., -1]
    a = torch.einsum("...nd,...btd->...btn", W1, x) + b1[..., None, None, :]
    b = torch.einsum("...nd,...btd->...btn", W2, x) + b2[..., None, None, :]
    return a * b


def scan_reference(u: torch.Tensor, lam: torch.Tensor) -> torch.Tensor:
    """h_t = lam * h_{t-1} + u_t, h_0 = 0, as a loop. u: (*E, B, T, n), lam: (*E, n)."""
    T = u.shape[-2]
    lam = lam[..., None, :]  # (*E, 1, n), broadcast over the batch
    h = torch.zeros_like(u[..., 0, :])
    hs = []
    for t in range(T):
        h = lam * h + u[..., t, :]
        hs.append(h)
    return torch.stack(hs, dim=-2)


def lagged(powers: torch.Tensor) -> torch.Tensor:
    """L[..., t, s, :] = powers[..., t - s, :] for s <= t, else 0: (..., T, n) -> (..., T, T, n)."""
    t = torch.arange(powers.shape[-2], device=powers.device)
    lag = t[:, None] - t[None, :]  # (T, T)
    return powers[..., lag.clamp(min=0), :] * (lag >= 0).to(powers.real.dtype)[:, :, None]


def decay_matrix(lam: torch.Tensor, T: int) -> torch.Tensor:
    """L[..., t, s, :] = lam^(t-s) for s <= t, else 0. lam: (*E, n) -> (*E, T, T, n).

    The powers come from a cumulative product, so that lam = 0 and lam = 1 are exact and their
    gradients finite (the fast twin from nu: ``fast_path.decay_matrix_from_nu``).
    """
    ones = lam[..., None, :] * 0.0 + 1.0  # (*E, 1, n); keeps lam in the graph when T = 1
    reps = lam[..., None, :].expand(*lam.shape[:-1], T - 1, lam.shape[-1])  # none when T = 1
    powers = torch.cat([ones, torch.cumprod(reps, dim=-2)], dim=-2)  # (*E, T, n): lam^k
    return lagged(powers)  # (*E, T, T, n)


def scan_parallel(u: torch.Tensor, lam: torch.Tensor) -> torch.Tensor:
    """All h_t at once: h_t = sum_{s<=t} lam^(t-s) u_s. u: (*E, B, T, n), lam: (*E, n)."""
    L = decay_matrix(lam, u.shape[-2])  # (*E, T, T, n)
    return torch.einsum("...tsn,...bsn->...btn", L, u)


def gated_rnn_forward(
    x: torch.Tensor, params: dict[str, torch.Tensor], *, mode: str = "parallel"
) -> torch.Tensor:
    """Eq. (2): x (*E, B, T, d) -> y (*E, B, T, d_out). ``params`` (leading dims *E): W_in1, W_in2,
    nu, D and W_out1, W_out2 or W_side (App. A.2); ``mode`` "parallel" or "reference"."""
    h = hidden_states(x, params, mode=mode)
    if "W_side" in params:
        W_s, b_s = params["W_side"][..., :-1], params["W_side"][..., -1]
        gate = torch.einsum("...nd,...btd->...btn", W_s, x) + b_s[..., None, None, :]
        return torch.einsum("...on,...btn->...bto", params["D"], gate * h)
    a = torch.einsum("...mn,...btn->...btm", params["W_out1"], h)
    b = torch.einsum("...mn,...btn->...btm", params["W_out2"], h)
    return torch.einsum("...om,...btm->...bto", params["D"], a * b)


def hidden_states(
    x: torch.Tensor, params: dict[str, torch.Tensor], *, mode: str = "parallel"
) -> torch.Tensor:
    """The recurrent states h_t of Eq. (2): x (*E, B, T, d) -> h (*E, B, T, n)."""
    u = input_gating(x, params["W_in1"], params["W_in2"])
    lam = lam_from_nu(params["nu"])
    if mode == "parallel":
        return scan_parallel(u, lam)
    if mode == "reference":
        return scan_reference(u, lam)
    raise ValueError(f"unknown mode {mode!r}; expected 'parallel' or 'reference'")


class GatedRNN(nn.Module):
    """Eq. (2): input gating, diagonal recurrence lam = exp(-exp(nu)), output (or side) gating, D.

    d inputs (read as x~ = [x; 1]), n recurrent neurons, m output-gating neurons (default n, as
    the paper's students; 0 with ``side``, the side gating of App. A.2), d_out outputs (default
    d). Init from ``seed``: weights ~ N(0, 1/fan_in), lam ~ U(lam_range). ``forward(x)``: (B, T, d)
    -> (B, T, d_out).
    """

    def __init__(
        self,
        d: int,
        n: int,
        m: int | None = None,
        d_out: int | None = None,
        *,
        side: bool = False,
        seed: int = 0,
        lam_range: tuple[float, float] = (0.0, 1.0),
        dtype: torch.dtype = torch.float32,
    ):
        super().__init__()
        d_out = d if d_out is None else d_out
        m = n if m is None else m
        for name, val in (("d", d), ("n", n), ("d_out", d_out)):
            if not isinstance(val, int) or val < 1:
                raise ValueError(f"{name} must be a positive integer, got {val!r}")
        if not side and (not isinstance(m, int) or m < 1):
            raise ValueError(f"m (output-gating neurons) must be a positive integer, got {m!r}")
        self.d, self.n, self.m, self.d_out, self.side = d, n, (0 if side else m), d_out, side
        g = torch.Generator().manual_seed(seed)

        def normal(*shape: int, fan_in: int) -> nn.Parameter:
            w = torch.randn(*shape, generator=g, dtype=torch.float64) / math.sqrt(fan_in)
            return nn.Parameter(w.to(dtype))

        self.W_in1 = normal(n, d + 1, fan_in=d + 1)
        self.W_in2 = normal(n, d + 1, fan_in=d + 1)
        lo, hi = lam_range
        lam0 = lo + (hi - lo) * torch.rand(n, generator=g, dtype=torch.float64)
        self.nu = nn.Parameter(nu_from_lam(lam0).to(dtype))
        if side:
            self.W_side = normal(n, d + 1, fan_in=d + 1)
            self.D = normal(d_out, n, fan_in=n)
        else:
            self.W_out1 = normal(m, n, fan_in=n)
            self.W_out2 = normal(m, n, fan_in=n)
            self.D = normal(d_out, m, fan_in=m)

    @property
    def lam(self) -> torch.Tensor:
        """lam = exp(-exp(nu)), shape (n,)."""
        return lam_from_nu(self.nu)

    @torch.no_grad()
    def set_lam(self, lam: torch.Tensor) -> None:
        """Set lam exactly (0 and 1 included) by setting nu = log(-log(lam))."""
        lam = torch.as_tensor(lam, dtype=torch.float64)
        if lam.shape != (self.n,):
            raise ValueError(f"lam must have shape ({self.n},), got {tuple(lam.shape)}")
        self.nu.copy_(nu_from_lam(lam).to(self.nu.dtype))

    def params(self) -> dict[str, torch.Tensor]:
        """The parameters as the dict ``gated_rnn_forward`` takes."""
        return dict(self.named_parameters())

    def forward(self, x: torch.Tensor, mode: str = "parallel") -> torch.Tensor:
        """x (B, T, d) -> y (B, T, d_out); ``mode`` "parallel" (fast) or "reference" (loop)."""
        self._check(x)
        return gated_rnn_forward(x, self.params(), mode=mode)

    def hidden(self, x: torch.Tensor, mode: str = "parallel") -> torch.Tensor:
        """The recurrent states h_t: x (B, T, d) -> (B, T, n)."""
        self._check(x)
        return hidden_states(x, self.params(), mode=mode)

    def _check(self, x: torch.Tensor) -> None:
        if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[-1] != self.d:
            shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(f"x must have shape (B, T, d={self.d}), got {shape}")
        dtype = self.W_in1.dtype
        if x.dtype != dtype:
            raise TypeError(
                f"x is {x.dtype} but the network's weights are {dtype}; cast one to the other "
                f"(x.to({dtype}) or rnn.to({x.dtype}))"
            )

    def extra_repr(self) -> str:
        gating = "side" if self.side else f"m={self.m}"
        return f"d={self.d}, n={self.n}, {gating}, d_out={self.d_out}"
