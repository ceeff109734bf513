"""ALBERT for Kokoro's phoneme encoder, without `transformers` (shipped in the GPU bundle as `kokoro/_albert.py`).

Kokoro's `CustomAlbert` subclasses `transformers.AlbertModel` and uses only its encoder's last hidden
state. The GPU machine's `transformers` version is unknown and a fresh venv has none, so the bundle
carries this module instead: the same modules under the same names (so the checkpoint's ``bert.*``
keys load with ``strict=True``) and the same arithmetic as transformers 5's AlbertModel with SDPA
attention, gelu_new, one shared layer group. Checked against `transformers` on the same weights
(tests/container/test_gpu_bundle.py). Dropout is inert at inference and left out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class AlbertConfig:
    vocab_size: int = 30000
    embedding_size: int = 128
    hidden_size: int = 4096
    num_hidden_layers: int = 12
    num_hidden_groups: int = 1
    num_attention_heads: int = 64
    intermediate_size: int = 16384
    inner_group_num: int = 1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    dropout: float = 0.0  # Kokoro's plbert config passes it; unused at inference

    def __init__(self, **kwargs: Any) -> None:
        for key, value in kwargs.items():
            setattr(self, key, value)


@dataclass
class AlbertOutput:
    last_hidden_state: torch.Tensor


def gelu_new(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class AlbertEmbeddings(nn.Module):
    def __init__(self, c: AlbertConfig) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab_size, c.embedding_size, padding_idx=c.pad_token_id)
        self.position_embeddings = nn.Embedding(c.max_position_embeddings, c.embedding_size)
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.embedding_size)
        self.LayerNorm = nn.LayerNorm(c.embedding_size, eps=c.layer_norm_eps)
        self.position_ids: torch.Tensor
        self.register_buffer("position_ids", torch.arange(c.max_position_embeddings).expand((1, -1)), persistent=False)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        length = input_ids.shape[1]
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(torch.zeros_like(input_ids))
        x = x + self.position_embeddings(self.position_ids[:, :length])
        return self.LayerNorm(x)


class AlbertAttention(nn.Module):
    def __init__(self, c: AlbertConfig) -> None:
        super().__init__()
        self.heads = c.num_attention_heads
        self.head_size = c.hidden_size // c.num_attention_heads
        self.query = nn.Linear(c.hidden_size, c.hidden_size)
        self.key = nn.Linear(c.hidden_size, c.hidden_size)
        self.value = nn.Linear(c.hidden_size, c.hidden_size)
        self.dense = nn.Linear(c.hidden_size, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        shape = (*x.shape[:-1], -1, self.head_size)
        q, k, v = (proj(x).view(*shape).transpose(1, 2) for proj in (self.query, self.key, self.value))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=self.head_size ** -0.5)
        out = out.transpose(1, 2).reshape(*x.shape[:-1], -1).contiguous()
        return self.LayerNorm(x + self.dense(out))


class AlbertLayer(nn.Module):
    def __init__(self, c: AlbertConfig) -> None:
        super().__init__()
        self.full_layer_layer_norm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.attention = AlbertAttention(c)
        self.ffn = nn.Linear(c.hidden_size, c.intermediate_size)
        self.ffn_output = nn.Linear(c.intermediate_size, c.hidden_size)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        a = self.attention(x, mask)
        return self.full_layer_layer_norm(self.ffn_output(gelu_new(self.ffn(a))) + a)


class AlbertLayerGroup(nn.Module):
    def __init__(self, c: AlbertConfig) -> None:
        super().__init__()
        self.albert_layers = nn.ModuleList([AlbertLayer(c) for _ in range(c.inner_group_num)])


class AlbertTransformer(nn.Module):
    def __init__(self, c: AlbertConfig) -> None:
        super().__init__()
        self.config = c
        self.embedding_hidden_mapping_in = nn.Linear(c.embedding_size, c.hidden_size)
        self.albert_layer_groups = nn.ModuleList([AlbertLayerGroup(c) for _ in range(c.num_hidden_groups)])

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        x = self.embedding_hidden_mapping_in(x)
        c = self.config
        for i in range(c.num_hidden_layers):
            group = self.albert_layer_groups[int(i / (c.num_hidden_layers / c.num_hidden_groups))]
            for layer in cast(AlbertLayerGroup, group).albert_layers:
                x = layer(x, mask)
        return x


class AlbertModel(nn.Module):
    def __init__(self, config: AlbertConfig) -> None:
        super().__init__()
        self.config = config
        self.embeddings = AlbertEmbeddings(config)
        self.encoder = AlbertTransformer(config)
        self.pooler = nn.Linear(config.hidden_size, config.hidden_size)  # in the checkpoint; never used

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> AlbertOutput:
        mask = None
        if attention_mask is not None and not bool(attention_mask.all()):
            # transformers' bidirectional SDPA mask: True where a key may be attended, [B, 1, 1, T].
            mask = attention_mask.bool()[:, None, None, :]
        return AlbertOutput(self.encoder(self.embeddings(input_ids), mask))
