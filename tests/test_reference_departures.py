"""The departures from the families' reference code that the chapter which_rnns_can_be_attention
and the model docstrings state (minimal-LRU, mamba-minimal) are what the code does: a change to
the code that removes one fails here, so that the prose is updated with it."""

from pathlib import Path

import torch

from gated_attention.models import lru, mamba

CHAPTER = Path(__file__).resolve().parents[1] / "book" / "which_rnns_can_be_attention.md"


def _params(fam, width=4):
    return fam.init(3, 2, width, 1, torch.Generator().manual_seed(0))


def test_lru_blocks_tie_gamma_and_decay_B():
    for fam in (lru.LRU, lru.LRU_IN_OUT, lru.LRU_IN_OUT_MLP):
        P = _params(fam)
        assert not any("gamma" in k for k in P), fam.name  # gamma is computed from nu
        B = [k for k in P if k.endswith(("_B_re", "_B_im"))]
        assert B and not set(B) & set(fam.no_decay), fam.name  # B is weight-decayed
        assert {k.split("_", 1)[1] for k in fam.no_decay} == {"nu", "theta"}, fam.name


def test_lru_block_has_no_gelu_or_normalisation_before_its_glu():
    """One block of the LRU In+Out is u + GLU(LRU(GLU(u))), nothing in between."""
    P = _params(lru.LRU_IN_OUT)
    x = torch.randn(1, 2, 5, 3, dtype=torch.float64)
    u = lru.linear(x, P["W_emb"], P["b_emb"])
    v = lru.glu(u, P["l1_W_3"], P["l1_b_3"], P["l1_W_4"], P["l1_b_4"])
    y = lru.lru_layer(v, P, 1)
    u = u + lru.glu(y, P["l1_W_1"], P["l1_b_1"], P["l1_W_2"], P["l1_b_2"])
    want = lru.linear(u, P["W_out"], P["b_out"])
    assert torch.allclose(lru.forward(x, P), want, rtol=0, atol=1e-12)


def test_mamba_layer_has_no_convolution_and_a_full_rank_delta():
    P = _params(mamba.MAMBA, width=6)
    assert not any("conv" in k for k in P)
    H = P["W_e"].shape[1]
    assert P["W_Delta"].shape[1:] == (H, H)  # square: no dt_rank bottleneck
    # no convolution over time: with nothing entering the state (B_t = 0), the output at t
    # reads x_t alone; a convolution would mix the earlier inputs into the channels
    P0 = {**P, "W_B": torch.zeros_like(P["W_B"])}
    x = torch.randn(1, 2, 5, 3, dtype=torch.float64)
    x2 = x.clone()
    x2[:, :, :-1] = torch.randn_like(x2[:, :, :-1])
    last = mamba.forward(x, P0)[:, :, -1]
    assert torch.allclose(last, mamba.forward(x2, P0)[:, :, -1], rtol=0, atol=1e-12)


def test_the_departures_are_stated_where_the_families_are_introduced():
    text = CHAPTER.read_text()
    for words in (
        "no GELU before the GLU",
        "no normalisation",
        "tied to $\\nu$",
        "weight decay on $B$",
        "no depthwise causal convolution, hence no SiLU after it",
        "a full-rank $\\Delta$",
    ):
        assert words in text, words
    for module in (lru, mamba):
        assert "Departures from" in module.__doc__, module.__name__
