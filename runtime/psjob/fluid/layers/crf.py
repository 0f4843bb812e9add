"""Fluid 1.8's sequence labelling layers (Paddle 1.8 API docs): linear_chain_crf (the CRF cost
and its transition parameter), crf_decoding (Viterbi with that parameter) and chunk_eval
(chunk precision / recall / F1). Kernels: fluid/ops/crf_ops.py."""
from __future__ import annotations

from psjob.fluid.framework import default_main_program
from psjob.fluid.layer_helper import LayerHelper
from psjob.fluid.layers._checks import check_dtype, check_int, check_variable
from psjob.fluid.param_attr import ParamAttr

__all__ = ["linear_chain_crf", "crf_decoding", "chunk_eval"]


def _check_sequences(input, label, length, layer):  # noqa: A002
    check_variable(input, "input", layer)
    check_dtype(input, "input", ("float32", "float64"), layer)
    if label is not None:
        check_variable(label, "label", layer)
        check_dtype(label, "label", ("int64",), layer)
    if length is not None:
        check_variable(length, "length", layer)
        check_dtype(length, "length", ("int64",), layer)
        if len(input.shape) != 3:
            raise ValueError(f"{layer}: with a length, input {input.name}{list(input.shape)} must be padded "
                             f"[batch, max_len, num_tags]")
    elif len(input.shape) != 2:
        raise ValueError(f"{layer}: input {input.name}{list(input.shape)} must be a [T, num_tags] sequence (LoD) "
                         f"or padded [batch, max_len, num_tags] with a length")


def linear_chain_crf(input, label, param_attr=None, length=None):  # noqa: A002
    """Each sequence's negative log-likelihood under a linear-chain CRF ([N, 1]), with a
    transition parameter [num_tags + 2, num_tags] (start weights, end weights, then tag i to
    tag j); input the emission scores, as LoD sequences or padded with `length`."""
    _check_sequences(input, label, length, "linear_chain_crf")
    helper = LayerHelper("linear_chain_crf")
    size = int(input.shape[-1])
    transition = helper.create_parameter(param_attr, [size + 2, size], input.dtype)
    alpha, emission_exps, transition_exps, log_likelihood = (
        helper.create_variable_for_type_inference(input.dtype) for _ in range(4))
    inputs = {"Emission": [input], "Transition": [transition], "Label": [label]}
    if length is not None:
        inputs["Length"] = [length]
    helper.append_op(type="linear_chain_crf", inputs=inputs,
                     outputs={"Alpha": [alpha], "EmissionExps": [emission_exps], "TransitionExps": [transition_exps],
                              "LogLikelihood": [log_likelihood]})
    return log_likelihood


def crf_decoding(input, param_attr, label=None, length=None):  # noqa: A002
    """The Viterbi tag path of each sequence under the transition parameter named by
    param_attr (linear_chain_crf's); with a label, 1 where the path agrees with it, else 0."""
    _check_sequences(input, label, length, "crf_decoding")
    name = param_attr.name if isinstance(param_attr, ParamAttr) else param_attr
    block = default_main_program().global_block()
    if not isinstance(name, str) or not block.has_var(name):
        raise ValueError(f"crf_decoding: param_attr must name an existing transition parameter "
                         f"(linear_chain_crf's), got {param_attr!r}")
    helper = LayerHelper("crf_decoding")
    path = helper.create_variable_for_type_inference("int64", stop_gradient=True)
    inputs = {"Emission": [input], "Transition": [block.var(name)]}
    if label is not None:
        inputs["Label"] = [label]
    if length is not None:
        inputs["Length"] = [length]
    helper.append_op(type="crf_decoding", inputs=inputs, outputs={"ViterbiPath": [path]})
    return path


def chunk_eval(input, label, chunk_scheme, num_chunk_types, excluded_chunk_types=None, seq_length=None):  # noqa: A002
    """Chunk precision, recall and F1 of tagged sequences, and the inferred, labelled and
    correct chunk counts (chunk_scheme 'IOB', 'IOE', 'IOBES' or 'plain')."""
    for arg, v in (("input", input), ("label", label)):
        check_variable(v, arg, "chunk_eval")
        check_dtype(v, arg, ("int64",), "chunk_eval")
    if chunk_scheme not in ("IOB", "IOE", "IOBES", "plain"):
        raise ValueError(f"chunk_eval: chunk_scheme must be 'IOB', 'IOE', 'IOBES' or 'plain', got {chunk_scheme!r}")
    helper = LayerHelper("chunk_eval")
    outs = [helper.create_variable_for_type_inference(dt, stop_gradient=True) for dt in ["float32"] * 3 + ["int64"] * 3]
    inputs = {"Inference": [input], "Label": [label]}
    if seq_length is not None:
        inputs["SeqLength"] = [check_variable(seq_length, "seq_length", "chunk_eval")]
    slots = ["Precision", "Recall", "F1-Score", "NumInferChunks", "NumLabelChunks", "NumCorrectChunks"]
    helper.append_op(type="chunk_eval", inputs=inputs, outputs={s: [o] for s, o in zip(slots, outs)},
                     attrs={"num_chunk_types": check_int(num_chunk_types, "num_chunk_types", "chunk_eval", minimum=1),
                            "chunk_scheme": chunk_scheme,
                            "excluded_chunk_types": [int(t) for t in excluded_chunk_types or []]})
    return tuple(outs)
