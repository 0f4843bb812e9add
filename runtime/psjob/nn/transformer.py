"""paddle.nn.MultiHeadAttention, TransformerEncoderLayer and TransformerEncoder in static mode,
built from the ops Paddle 3.0.0's nn/layer/transformer.py builds them from, with its sublayers
(so its parameter names and shapes, and a Paddle-saved state loads):

- MultiHeadAttention: Linear q_proj, k_proj, v_proj, out_proj ([embed, embed], bias unless
  bias_attr=False); q, k, v reshaped to [B, L, heads, head_dim] and transposed to
  [B, heads, L, head_dim]; softmax(q * head_dim**-0.5 @ k^T + mask) (dropout on the weights
  while training) @ v, transposed back and reshaped to [B, L, embed], then out_proj.
- TransformerEncoderLayer: self_attn, linear1 [d, ff], dropout, linear2 [ff, d], norm1, norm2,
  dropout1, dropout2; post-norm unless normalize_before (Vaswani et al., "Attention Is All You
  Need", 2017). weight_attr / bias_attr may be one attribute or a list of two (attention, FFN).
- TransformerEncoder: num_layers copies of the encoder layer (the first is the one given), then
  an optional norm.

An attention mask of bool or int type becomes (mask - 1) * 1e9 (0 keeps, -1e9 drops) as in
Paddle's _convert_attention_mask. Caches (incremental decoding) are refused by name.
"""
from __future__ import annotations

import copy

from psjob import tensor as _t
from psjob.fluid.layers._checks import check_int, check_variable
from psjob.nn import functional as F
from psjob.nn.common import Dropout, Linear
from psjob.nn.layer import Layer, LayerList
from psjob.nn.norm import LayerNorm
from psjob.param_attr import ParamAttr

__all__ = ["MultiHeadAttention", "TransformerEncoderLayer", "TransformerEncoder"]


def _attr_list(attr, n):
    """Paddle's _convert_param_attr_to_list: a list of n attributes (False leaves a bias out)."""
    if isinstance(attr, (list, tuple)):
        if len(attr) != n:
            raise ValueError(f"expected {n} parameter attributes, got {len(attr)}")
        return [(ParamAttr._to_attr(None) if a else False) if isinstance(a, bool) else ParamAttr._to_attr(a)
                for a in attr]
    if isinstance(attr, bool):
        return [ParamAttr._to_attr(None) for _ in range(n)] if attr else [False] * n
    base = ParamAttr._to_attr(attr)
    out = []
    for i in range(n):
        a = copy.deepcopy(base)
        if base.name:  # a named attribute gets a suffix per use, as in Paddle
            a.name = f"{base.name}_{i}"
        out.append(a)
    return out


def _convert_mask(mask, dtype):
    if mask is None or mask.dtype == dtype:
        return mask
    if mask.dtype == "bool" or "int" in str(mask.dtype):
        return _t.scale(_t.cast(mask, dtype), 1e9, bias=-1.0, bias_after_scale=False)
    return _t.cast(mask, dtype)


class MultiHeadAttention(Layer):
    def __init__(self, embed_dim, num_heads, dropout=0.0, kdim=None, vdim=None, need_weights=False,
                 weight_attr=None, bias_attr=None):
        super().__init__()
        self.embed_dim = check_int(embed_dim, "embed_dim", "MultiHeadAttention", minimum=1)
        self.num_heads = check_int(num_heads, "num_heads", "MultiHeadAttention", minimum=1)
        if self.embed_dim % self.num_heads:
            raise ValueError(f"MultiHeadAttention: embed_dim {embed_dim} must be divisible by num_heads {num_heads}")
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self.dropout, self.need_weights = dropout, need_weights
        self.head_dim = self.embed_dim // self.num_heads
        self.q_proj = Linear(embed_dim, embed_dim, weight_attr, bias_attr=bias_attr)
        self.k_proj = Linear(self.kdim, embed_dim, weight_attr, bias_attr=bias_attr)
        self.v_proj = Linear(self.vdim, embed_dim, weight_attr, bias_attr=bias_attr)
        self.out_proj = Linear(embed_dim, embed_dim, weight_attr, bias_attr=bias_attr)

    def _heads(self, x):
        x = _t.reshape(x, [0, 0, self.num_heads, self.head_dim])
        return _t.transpose(x, [0, 2, 1, 3])

    def forward(self, query, key=None, value=None, attn_mask=None, cache=None):
        check_variable(query, "query", "MultiHeadAttention")
        if cache is not None:
            raise ValueError("MultiHeadAttention: caches (incremental decoding) are not supported by psjob")
        key = query if key is None else key
        value = query if value is None else value
        q = self._heads(self.q_proj(query))
        k, v = self._heads(self.k_proj(key)), self._heads(self.v_proj(value))
        product = _t.matmul(_t.scale(q, self.head_dim ** -0.5), k, transpose_y=True)
        if attn_mask is not None:
            product = _t.add(product, _convert_mask(attn_mask, product.dtype))
        weights = F.softmax(product)
        if self.dropout:
            weights = F.dropout(weights, self.dropout, training=self.training, mode="upscale_in_train")
        out = _t.transpose(_t.matmul(weights, v), [0, 2, 1, 3])
        out = self.out_proj(_t.reshape(out, [0, 0, self.embed_dim]))
        return (out, weights) if self.need_weights else out


class TransformerEncoderLayer(Layer):
    def __init__(self, d_model, nhead, dim_feedforward, dropout=0.1, activation="relu", attn_dropout=None,
                 act_dropout=None, normalize_before=False, weight_attr=None, bias_attr=None, layer_norm_eps=1e-5):
        super().__init__()
        # the arguments TransformerEncoder builds its further layers from, as Paddle's _config
        self._config = dict(d_model=d_model, nhead=nhead, dim_feedforward=dim_feedforward, dropout=dropout,
                            activation=activation, attn_dropout=attn_dropout, act_dropout=act_dropout,
                            normalize_before=normalize_before, weight_attr=weight_attr, bias_attr=bias_attr,
                            layer_norm_eps=layer_norm_eps)
        check_int(dim_feedforward, "dim_feedforward", "TransformerEncoderLayer", minimum=1)
        if not hasattr(F, activation):
            raise ValueError(f"TransformerEncoderLayer: unknown activation {activation!r}")
        attn_dropout = dropout if attn_dropout is None else attn_dropout
        act_dropout = dropout if act_dropout is None else act_dropout
        self.normalize_before = normalize_before
        weight_attrs, bias_attrs = _attr_list(weight_attr, 2), _attr_list(bias_attr, 2)
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout=attn_dropout, weight_attr=weight_attrs[0],
                                            bias_attr=bias_attrs[0])
        self.linear1 = Linear(d_model, dim_feedforward, weight_attrs[1], bias_attr=bias_attrs[1])
        self.dropout = Dropout(act_dropout, mode="upscale_in_train")
        self.linear2 = Linear(dim_feedforward, d_model, weight_attrs[1], bias_attr=bias_attrs[1])
        self.norm1 = LayerNorm(d_model, layer_norm_eps)
        self.norm2 = LayerNorm(d_model, layer_norm_eps)
        self.dropout1 = Dropout(dropout, mode="upscale_in_train")
        self.dropout2 = Dropout(dropout, mode="upscale_in_train")
        self.activation = getattr(F, activation)

    def forward(self, src, src_mask=None, cache=None):
        check_variable(src, "src", "TransformerEncoderLayer")
        if cache is not None:
            raise ValueError("TransformerEncoderLayer: caches (incremental decoding) are not supported by psjob")
        src_mask = _convert_mask(src_mask, src.dtype)
        residual = src
        if self.normalize_before:
            src = self.norm1(src)
        src = _t.add(residual, self.dropout1(self.self_attn(src, src, src, src_mask)))
        if not self.normalize_before:
            src = self.norm1(src)
        residual = src
        if self.normalize_before:
            src = self.norm2(src)
        src = self.linear2(self.dropout(self.activation(self.linear1(src))))
        src = _t.add(residual, self.dropout2(src))
        if not self.normalize_before:
            src = self.norm2(src)
        return src


class TransformerEncoder(Layer):
    def __init__(self, encoder_layer, num_layers, norm=None):
        super().__init__()
        if not isinstance(encoder_layer, TransformerEncoderLayer):
            raise TypeError(f"TransformerEncoder: encoder_layer must be a TransformerEncoderLayer, "
                            f"got {type(encoder_layer).__name__}")
        self.num_layers = check_int(num_layers, "num_layers", "TransformerEncoder", minimum=1)
        self.layers = LayerList([encoder_layer if i == 0 else type(encoder_layer)(**encoder_layer._config)
                                 for i in range(self.num_layers)])
        self.norm = norm

    def forward(self, src, src_mask=None, cache=None):
        if cache is not None:
            raise ValueError("TransformerEncoder: caches (incremental decoding) are not supported by psjob")
        src_mask = _convert_mask(src_mask, src.dtype)
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=src_mask)
        return self.norm(output) if self.norm is not None else output
