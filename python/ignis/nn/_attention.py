"""multi_head_attention_forward: torch.nn.functional's multi-head attention
on sequence-first inputs ((L, N, E), or unbatched (L, E)), with the
parameters passed in; nn.MultiheadAttention is this function over its
own parameters."""
import ignis


def _canonical_mask(mask, name, target_dtype):
    """A mask as an additive float mask: bool True (= not allowed) -> -inf."""
    if mask is None:
        return None
    if mask.dtype == ignis.bool:
        return ignis.zeros_like(mask, dtype=target_dtype).masked_fill_(mask, float("-inf"))
    if not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


def _check_batching(query, key, value, key_padding_mask, attn_mask, num_heads):
    """Whether the inputs are batched (3-D) or not (2-D), checking that
    key, value and the masks agree with the query."""
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError(f"For batched (3-D) `query`, expected `key` and `value` to be "
                                 f"3-D but found {key.dim()}-D and {value.dim()}-D tensors "
                                 f"respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError(f"For batched (3-D) `query`, expected `key_padding_mask` to be "
                                 f"`None` or 2-D but found {key_padding_mask.dim()}-D tensor "
                                 f"instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(f"For batched (3-D) `query`, expected `attn_mask` to be `None`, "
                                 f"2-D or 3-D but found {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key` and `value` to be "
                                 f"2-D but found {key.dim()}-D and {value.dim()}-D tensors "
                                 f"respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key_padding_mask` to "
                                 f"be `None` or 1-D but found {key_padding_mask.dim()}-D tensor "
                                 f"instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(f"For unbatched (2-D) `query`, expected `attn_mask` to be "
                                     f"`None`, 2-D or 3-D but found {attn_mask.dim()}-D tensor "
                                     f"instead")
            if attn_mask.dim() == 3:
                expected = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != expected:
                    raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                         f"{tuple(attn_mask.shape)}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                         f"{query.dim()}-D query tensor")


def _in_projection(query, key, value, in_proj_weight, in_proj_bias, separate, q_proj_weight,
                   k_proj_weight, v_proj_weight):
    E = query.shape[-1]
    b = in_proj_bias
    bq, bk, bv = (None, None, None) if b is None else (b[:E], b[E:2 * E], b[2 * E:])
    linear = ignis.nn.functional.linear
    if not separate:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        w = in_proj_weight
        if query is key and key is value:  # self-attention: one matmul
            return linear(query, w, b).chunk(3, dim=-1)
        wq, wk, wv = w[:E], w[E:2 * E], w[2 * E:]
    else:
        for name, w in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {name}_proj_weight "
                                     f"is None")
        wq, wk, wv = q_proj_weight, k_proj_weight, v_proj_weight
    return linear(query, wq, bq), linear(key, wk, bk), linear(value, wv, bv)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """torch.nn.functional.multi_head_attention_forward: returns (output of
    query's shape, attention weights (N, L, S), per head (N, H, L, S) without
    average_attn_weights, or None without need_weights)."""
    F = ignis.nn.functional
    is_batched = _check_batching(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        # Add a batch dim of 1, keeping query/key/value identities (self-attention).
        same_kv = key is value
        same_qk = query is key
        query = query.unsqueeze(1)
        key = query if same_qk else key.unsqueeze(1)
        value = key if same_kv else value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)

    L, N, E = query.shape
    S = key.shape[0]
    if E != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, "
                             f"but got {E}")
    head_dim = E // num_heads
    if head_dim * num_heads != E:
        raise AssertionError(f"embed_dim {E} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {tuple(key.shape[:2])} do not "
                                 f"match value's {tuple(value.shape[:2])}")
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(f"key shape {tuple(key.shape)} does not match value shape "
                             f"{tuple(value.shape)}")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    # A causal hint is only used where sdpa can take it alone (no padding
    # mask, no weights asked for); otherwise attn_mask carries the causality.
    use_causal = is_causal and key_padding_mask is None and not need_weights
    if use_causal:
        attn_mask = None
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", query.dtype)

    q, k, v = _in_projection(query, key, value, in_proj_weight, in_proj_bias,
                             use_separate_proj_weight, q_proj_weight, k_proj_weight,
                             v_proj_weight)

    attn_mask = _canonical_mask(attn_mask, "attn_mask", q.dtype)
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (L, S):
                raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)},"
                                   f" but should be {(L, S)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif tuple(attn_mask.shape) != (N * num_heads, L, S):
            raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, "
                               f"but should be {(N * num_heads, L, S)}.")

    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key/value.")
        k = ignis.cat([k, bias_k.expand(1, N, E)])
        v = ignis.cat([v, bias_v.expand(1, N, E)])
        attn_mask = None if attn_mask is None else F.pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else F.pad(key_padding_mask, (0, 1))
    elif (bias_k is None) != (bias_v is None):
        raise AssertionError("bias_k and bias_v must both be given or both be None")

    # (seq, N, E) -> (N * H, seq, D)
    q = q.reshape(L, N * num_heads, head_dim).transpose(0, 1)
    if static_k is None:
        k = k.reshape(k.shape[0], N * num_heads, head_dim).transpose(0, 1)
    else:
        if tuple(static_k.shape[::2]) != (N * num_heads, head_dim):
            raise AssertionError(f"expecting static_k of shape ({N * num_heads}, S, {head_dim})"
                                 f", but got {tuple(static_k.shape)}")
        k = static_k
    if static_v is None:
        v = v.reshape(v.shape[0], N * num_heads, head_dim).transpose(0, 1)
    else:
        if tuple(static_v.shape[::2]) != (N * num_heads, head_dim):
            raise AssertionError(f"expecting static_v of shape ({N * num_heads}, S, {head_dim})"
                                 f", but got {tuple(static_v.shape)}")
        v = static_v
    if add_zero_attn:
        zeros = ignis.zeros((N * num_heads, 1, head_dim), dtype=k.dtype, device=k.device)
        k = ignis.cat([k, zeros], dim=1)
        v = ignis.cat([v, zeros.to(v.dtype)], dim=1)
        attn_mask = None if attn_mask is None else F.pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else F.pad(key_padding_mask, (0, 1))
    S = k.shape[1]

    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (N, S):
            raise AssertionError(f"expecting key_padding_mask shape of {(N, S)}, but got "
                                 f"{tuple(key_padding_mask.shape)}")
        padding = key_padding_mask.reshape(N, 1, 1, S).expand(N, num_heads, 1, S) \
            .reshape(N * num_heads, 1, S)
        attn_mask = padding if attn_mask is None else attn_mask + padding

    if not training:
        dropout_p = 0.0

    if need_weights:
        scores = ignis.bmm(q * (float(head_dim) ** -0.5), k.transpose(-2, -1))
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = F.softmax(scores, dim=-1)
        if dropout_p > 0.0:
            weights = F.dropout(weights, p=dropout_p)
        out = ignis.bmm(weights, v)  # (N * H, L, D)
        out = out.transpose(0, 1).reshape(L * N, E)
        out = F.linear(out, out_proj_weight, out_proj_bias).reshape(L, N, E)
        weights = weights.reshape(N, num_heads, L, S)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not is_batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights

    if attn_mask is not None:
        # (1 or N * H, L or 1, S) -> broadcastable to (N, H, L, S)
        attn_mask = attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1 else \
            attn_mask.reshape(N, num_heads, -1, S)
    out = F.scaled_dot_product_attention(q.reshape(N, num_heads, L, head_dim),
                                         k.reshape(N, num_heads, S, head_dim),
                                         v.reshape(N, num_heads, S, head_dim),
                                         attn_mask, dropout_p, use_causal)
    out = out.permute(2, 0, 1, 3).reshape(L * N, E)
    out = F.linear(out, out_proj_weight, out_proj_bias).reshape(L, N, E)
    if not is_batched:
        out = out.squeeze(1)
    return out, None
