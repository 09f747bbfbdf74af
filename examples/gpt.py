"""A small GPT-style decoder written once against PyTorch's API.

`build_gpt(lib)` returns the model classes for `lib` = ignis or torch, so the
example, the parity test (tests/python/test_gpt_parity.py) and the benchmark
(bench/train.py) run the very same model code on both libraries:
token + position embeddings, pre-LayerNorm blocks of causal self-attention
and a GELU MLP, a final LayerNorm and an output head tied to the token
embedding (GPT-2 / nanoGPT layout and initialisation).
"""
import math
from dataclasses import dataclass


@dataclass
class GPTConfig:
    vocab_size: int = 96
    block_size: int = 64
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64
    dropout: float = 0.0
    use_mha: bool = False  # attention through nn.MultiheadAttention instead of SDPA


def build_gpt(lib):
    nn = lib.nn
    F = lib.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            self.n_head = cfg.n_head
            self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
            self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd)
            self.resid_dropout = nn.Dropout(cfg.dropout)
            self.dropout = cfg.dropout

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.c_attn(x).split(C, dim=2)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            y = F.scaled_dot_product_attention(
                q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True)
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            return self.resid_dropout(self.c_proj(y))

    class MHASelfAttention(nn.Module):
        """The same attention through nn.MultiheadAttention (batch_first)."""

        def __init__(self, cfg):
            super().__init__()
            self.attn = nn.MultiheadAttention(cfg.n_embd, cfg.n_head, dropout=cfg.dropout,
                                              batch_first=True)
            mask = lib.ones(cfg.block_size, cfg.block_size, dtype=lib.bool).triu(1)
            self.register_buffer("mask", mask, persistent=False)

        def forward(self, x):
            T = x.shape[1]
            y, _ = self.attn(x, x, x, attn_mask=self.mask[:T, :T], need_weights=False,
                             is_causal=True)
            return y

    class MLP(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            self.c_fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd)
            self.dropout = nn.Dropout(cfg.dropout)

        def forward(self, x):
            return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))

    class Block(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            self.ln_1 = nn.LayerNorm(cfg.n_embd)
            self.attn = MHASelfAttention(cfg) if cfg.use_mha else CausalSelfAttention(cfg)
            self.ln_2 = nn.LayerNorm(cfg.n_embd)
            self.mlp = MLP(cfg)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            self.cfg = cfg
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(cfg.vocab_size, cfg.n_embd),
                wpe=nn.Embedding(cfg.block_size, cfg.n_embd),
                drop=nn.Dropout(cfg.dropout),
                h=nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)]),
                ln_f=nn.LayerNorm(cfg.n_embd),
            ))
            self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
            self.transformer.wte.weight = self.lm_head.weight  # tied output head
            self.apply(self._init_weights)
            for name, p in self.named_parameters():
                if name.endswith("c_proj.weight"):
                    nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))

        @staticmethod
        def _init_weights(module):
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)

        def forward(self, idx, targets=None):
            B, T = idx.shape
            pos = lib.arange(T, dtype=lib.long, device=idx.device)
            tr = self.transformer
            x = tr.drop(tr.wte(idx) + tr.wpe(pos))
            for block in tr.h:
                x = block(x)
            logits = self.lm_head(tr.ln_f(x))
            loss = None
            if targets is not None:
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
            return logits, loss

    return GPT


def configure_optimizer(lib, model, lr=3e-3, weight_decay=0.1):
    """AdamW with weight decay on matrices only (nanoGPT's grouping)."""
    params = [p for p in model.parameters()]
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    return lib.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                            {"params": no_decay, "weight_decay": 0.0}],
                           lr=lr, betas=(0.9, 0.95))
