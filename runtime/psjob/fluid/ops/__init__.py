"""Kernel modules. Each module registers its ops on import (see registry.py);
`load_all` imports them all once the IR exists (psjob.fluid's API calls it, and
the registry on its first lookup of an op it lacks: the kernel modules import
framework.py, which imports the registry). A new op file is listed here."""
from psjob.fluid.ops import registry as _registry


def load_all():
    from psjob.fluid.ops import (
        activation_ops,
        clip_ops,
        collective_ops,
        control_flow_ops,
        conv3d_ops,
        conv_ops,
        crf_ops,
        cvm_ops,
        data_norm_ops,
        dist_ops,
        einsum_ops,
        embedding_pool_ops,
        fluid18_ops,
        gather_ops,
        gru_ops,
        heter_ops,
        hsigmoid_ops,
        index_ops,
        interp_ops,
        layer_norm_ops,
        logic_ops,
        loss_ops,
        lr_ops,
        lstm_ops,
        math_extra_ops,
        math_ops,
        metric_ops,
        nce_ops,
        nn_ops,
        optimizer_ops,
        pad_ops,
        pool_ops,
        py_func_ops,
        random_ops,
        rank_attention_ops,
        reader_ops,
        reduce_ops,
        regularizer_ops,
        rnn_ops,
        sample_logits_ops,
        search_ops,
        sequence_layer_ops,
        sequence_lod_ops,
        sequence_mask_ops,
        sequence_ops,
        shape_ops,
        similarity_ops,
        table_ops,
        tdm_ops,
        tensor_extra_ops,
        tensor_math_ops,
        tensor_ops,
    )


_registry.set_kernel_loader(load_all)
