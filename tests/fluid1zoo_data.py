"""Small synthetic data sets in the formats PaddlePaddle/models' Fluid 1.x recommendation
examples read (PaddleRec/ctr/*, word2vec, ncf, multi_task, ...), for runs with no internet.

Each writer takes the example's working directory and fills in what its reader opens, with a
learnable signal (the label depends on a few hidden per-token weights), deterministic from a
seed (numpy RandomState). Sizes are a few thousand lines: enough for a loss curve, short enough
for a test. Usable as a script: `python fluid1zoo_data.py MODEL DIR` writes MODEL's data into DIR.
"""
from __future__ import annotations

import os
import pickle
import re
import sys

import numpy as np


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _criteo_rows(n, seed, vocab=50):
    """Raw Criteo rows: (label, 13 integer strings with some blanks, 26 hex tokens)."""
    rs = np.random.RandomState(seed)
    w = rs.normal(0, 1.0, size=(26, vocab))
    tokens = [["%08x" % rs.randint(0, 2 ** 31) for _ in range(vocab)] for _ in range(26)]
    for _ in range(n):
        cat = rs.randint(0, vocab, size=26)
        ints = rs.randint(0, 20, size=13)
        z = w[np.arange(26), cat].sum() / np.sqrt(26) * 2.0 + 0.3 * (ints[0] / 20.0 - 0.5)
        label = int(rs.rand() < _sigmoid(z))
        dense = [("" if rs.rand() < 0.1 else str(v)) for v in ints]
        yield label, dense, [tokens[i][c] for i, c in enumerate(cat)]


def _write_criteo(path, n, seed):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    rows = list(_criteo_rows(n, seed))
    with open(path, "w") as f:
        for label, dense, cats in rows:
            f.write("\t".join([str(label)] + dense + cats) + "\n")
    return rows


def deepfm(d, n=2000, seed=7):
    """ctr/deepfm: data/train_data/part-0 (raw Criteo) and the feature dict pickle that
    criteo_reader.py maps raw values with (1..13 for the integer columns, then one id per token).
    Returns the number of features (--num_feat)."""
    rows = _write_criteo(os.path.join(d, "data", "train_data", "part-0"), n, seed)
    feat = {i: i for i in range(1, 14)}
    for _, _, cats in rows:
        for t in cats:
            feat.setdefault(t, len(feat) + 1)
    with open(os.path.join(d, "data", "aid_data", "feat_dict_10.pkl2"), "wb") as f:
        pickle.dump(feat, f, protocol=2)
    return len(feat) + 1


def xdeepfm(d, n=2000, seed=7):
    """ctr/xdeepfm: data/train_data/part-0, lines `label \\t 39 feature ids` (the preprocessed
    Criteo the example downloads). Returns the number of features (--num_feat)."""
    path = os.path.join(d, "data", "train_data", "part-0")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    rows = list(_criteo_rows(n, seed))
    feat = {}
    with open(path, "w") as f:
        for label, dense, cats in rows:
            ids = [feat.setdefault(("I", i, v), len(feat) + 1) for i, v in enumerate(dense)]
            ids += [feat.setdefault(("C", t), len(feat) + 1) for t in cats]
            f.write("\t".join(str(x) for x in [label] + ids) + "\n")
    return len(feat) + 1


def dcn(d, n=2000, seed=7):
    """ctr/dcn: data/train/part-0 (raw Criteo), data/vocab/C1..C26.txt (one token a line)
    and data/cat_feature_num.txt (`Ci size` lines, size = vocabulary + 1 for id 0)."""
    rows = _write_criteo(os.path.join(d, "data", "train", "part-0"), n, seed)
    os.makedirs(os.path.join(d, "data", "vocab"), exist_ok=True)
    with open(os.path.join(d, "data", "cat_feature_num.txt"), "w") as num:
        for i in range(26):
            toks = sorted({cats[i] for _, _, cats in rows})
            with open(os.path.join(d, "data", "vocab", "C%d.txt" % (i + 1)), "w") as f:
                f.write("".join(t + "\n" for t in toks))
            num.write("C%d %d\n" % (i + 1, len(toks) + 1))


def wide_deep(d, n=2000, seed=7):
    """ctr/wide_deep: train_data/train_data.csv with a header, 8 wide + 58 deep float
    columns and a 0/1 label (the census-income preprocessing's layout)."""
    rs = np.random.RandomState(seed)
    x = rs.normal(size=(n, 66)).astype(np.float32)
    w = rs.normal(size=66)
    y = (rs.rand(n) < _sigmoid(x @ w / 4.0)).astype(int)
    os.makedirs(os.path.join(d, "train_data"), exist_ok=True)
    with open(os.path.join(d, "train_data", "train_data.csv"), "w") as f:
        f.write(",".join(["f%d" % i for i in range(66)] + ["label"]) + "\n")
        for row, lab in zip(x, y):
            f.write(",".join("%.4f" % v for v in row) + ",%d\n" % lab)


def din(d, n=2000, seed=7, items=200, cats=20):
    """ctr/din: data/config.txt (user, item, category counts) and data/paddle_train.txt lines
    `hist items;hist cats;target item;target cat;label` — clicked when the target's category
    is among the history's."""
    rs = np.random.RandomState(seed)
    item_cat = rs.randint(0, cats, size=items)
    os.makedirs(os.path.join(d, "data"), exist_ok=True)
    with open(os.path.join(d, "data", "config.txt"), "w") as f:
        f.write("%d\n%d\n%d\n" % (100, items, cats))
    with open(os.path.join(d, "data", "paddle_train.txt"), "w") as f:
        for _ in range(n):
            hist = rs.randint(1, items, size=rs.randint(1, 8))
            tgt = int(rs.randint(1, items))
            label = int(item_cat[tgt] in set(item_cat[hist]) or rs.rand() < 0.1)
            f.write("%s;%s;%d;%d;%d\n" % (" ".join(map(str, hist)), " ".join(str(item_cat[h]) for h in hist),
                                         tgt, item_cat[tgt], label))


def word2vec(d, n=400, seed=7, vocab=100):
    """word2vec: data/dict (`word count` lines, ids are line numbers) and data/train/part-0
    (lines of word ids), a corpus of short sentences drawn from a few topics."""
    rs = np.random.RandomState(seed)
    os.makedirs(os.path.join(d, "data", "train"), exist_ok=True)
    topics = rs.randint(0, vocab, size=(8, 12))
    counts = np.zeros(vocab, dtype=int)
    lines = []
    for _ in range(n):
        ws = rs.choice(topics[rs.randint(0, 8)], size=rs.randint(4, 12))
        counts[ws] += 1
        lines.append(" ".join(map(str, ws)))
    with open(os.path.join(d, "data", "train", "part-0"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(d, "data", "dict"), "w") as f:
        f.write("".join("w%d %d\n" % (i, max(c, 1)) for i, c in enumerate(counts)))


def ncf(d, n=2000, seed=7, users=100, items=200):
    """ncf: Data/train_data.csv (`user,item,label`), Data/ml-1m.test.rating and .test.negative
    (the evaluation lists train.py loads first). Users like items of their own group."""
    rs = np.random.RandomState(seed)
    os.makedirs(os.path.join(d, "Data"), exist_ok=True)
    ug, ig = rs.randint(0, 4, size=users), rs.randint(0, 4, size=items)
    with open(os.path.join(d, "Data", "train_data.csv"), "w") as f:
        for _ in range(n):
            u, i = rs.randint(0, users), rs.randint(0, items)
            f.write("%d,%d,%d\n" % (u, i, int(ug[u] == ig[i])))
    with open(os.path.join(d, "Data", "ml-1m.test.rating"), "w") as r, \
            open(os.path.join(d, "Data", "ml-1m.test.negative"), "w") as g:
        for u in range(users):
            r.write("%d\t%d\t5\t0\n" % (u, rs.randint(0, items)))
            g.write("(%d,0)\t%s\n" % (u, "\t".join(str(x) for x in rs.randint(0, items, size=9))))


def esmm(d, n=2000, seed=7, feats=300):
    """multi_task/esmm: train_data/part-0 lines `id,click,buy,x,field:feat,...` over the
    example's 23 fields, and vocab/vocab_size.txt."""
    fields = ['101', '109_14', '110_14', '127_14', '150_14', '121', '122', '124', '125', '126', '127',
              '128', '129', '205', '206', '207', '210', '216', '508', '509', '702', '853', '301']
    rs = np.random.RandomState(seed)
    w = rs.normal(size=feats)
    os.makedirs(os.path.join(d, "train_data"), exist_ok=True)
    os.makedirs(os.path.join(d, "vocab"), exist_ok=True)
    with open(os.path.join(d, "train_data", "part-0"), "w") as f:
        for k in range(n):
            ids = rs.randint(1, feats, size=len(fields))
            z = w[ids].sum() / np.sqrt(len(fields)) * 2
            click = int(rs.rand() < _sigmoid(z))
            buy = int(click and rs.rand() < _sigmoid(z - 1))
            f.write("%d,%d,%d,0,%s\n" % (k, click, buy, ",".join("%s:%d" % fi for fi in zip(fields, ids))))
    with open(os.path.join(d, "vocab", "vocab_size.txt"), "w") as f:
        f.write("%d\n" % feats)


def census(d, n=1000, seed=7, width=499):
    """multi_task/mmoe, share_bottom: train_data/ and test_data/ CSVs with a header,
    columns marital, income (0/1), then `width` float features."""
    rs = np.random.RandomState(seed)
    w1, w2 = rs.normal(size=width), rs.normal(size=width)
    for sub in ("train_data", "test_data"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
        x = (rs.rand(n, width) < 0.05).astype(np.float32)
        y1 = (x @ w1 > 0).astype(int)
        y2 = (x @ w2 > 0).astype(int)
        with open(os.path.join(d, sub, sub + ".csv"), "w") as f:
            f.write(",".join(["marital", "income"] + ["f%d" % i for i in range(width)]) + "\n")
            for a, b, row in zip(y1, y2, x):
                f.write("%d,%d," % (a, b) + ",".join("%g" % v for v in row) + "\n")


# -- the runs: one entry per vendored example ---------------------------------------------
# dir: under tests/thirdparty/models-fluid/PaddleRec; data: a WRITERS key; args: the script's
# own options (small sizes, one short epoch); lines: a regex every printed result line matches
# (its groups: the numbers compared with Paddle's); count: how many such lines a run prints;
# saved: the fluid.save prefixes it writes; pinned: compared with Paddle 1.8.5 from the same
# initial parameters (tests/data/fluid1zoo/<name>.npz, .json), or why not; needs: modules the
# example imports beyond numpy (the test skips without them); infer: a second script run after
# training in the same folder (copy: files it reads, made from the training data); env: extra
# environment variables of both runs.
MODELS = {
    "wide_deep": dict(dir="ctr/wide_deep", data="wide_deep", script="train.py",
                      args=["--epochs", "1", "--batch_size", "40", "--use_gpu", "0", "--train_data_path",
                            "train_data/train_data.csv", "--model_dir", "model_dir", "--hidden1_units", "16",
                            "--hidden2_units", "8", "--hidden3_units", "4"],
                      lines=r"loss:([0-9.]+), acc:([0-9.]+), auc:([0-9.]+)", count=50,
                      saved=["model_dir/epoch_1/checkpoint"], pinned=True,
                      # then infer.py on the saved epoch (fluid.load), over the training file
                      infer=dict(script="infer.py", copy=[("train_data/train_data.csv", "test_data/test_data.csv")],
                                 args=["--batch_size", "40", "--use_gpu", "0", "--test_epoch", "1",
                                       "--test_data_path", "test_data/test_data.csv", "--model_dir", "model_dir",
                                       "--hidden1_units", "16", "--hidden2_units", "8", "--hidden3_units", "4"],
                                 lines=r"mean_acc:([0-9.]+), mean_auc:([0-9.]+)", count=1)),
    "ncf": dict(dir="ncf", data="ncf", script="train.py",
                args=["--use_gpu", "0", "--NeuMF", "1", "--epochs", "1", "--batch_size", "256", "--num_factors", "8",
                      "--num_neg", "4", "--lr", "0.001", "--model_dir", "model_dir", "--num_users", "100",
                      "--num_items", "200"],
                lines=r"batch_id: \d+, batch_time: \S+, loss: ([0-9.]+)", count=8,
                saved=[], pinned=True, needs=["scipy"]),
    "deepfm": dict(dir="ctr/deepfm", data="deepfm", script="local_train.py",
                   args=["--num_epoch", "1", "--num_thread", "1", "--num_feat", "1400", "--model_output_dir",
                         "models", "--embedding_size", "4", "--layer_sizes", "16", "16"],
                   lines=None, count=0, saved=["models/epoch_1"], pinned=True),
    "xdeepfm": dict(dir="ctr/xdeepfm", data="xdeepfm", script="local_train.py",
                    args=["--num_epoch", "1", "--num_thread", "1", "--num_feat", "1600", "--use_gpu", "0",
                          "--model_output_dir", "models", "--print_steps", "5", "--embedding_size", "4"],
                    lines=None, count=0, saved=["models/epoch_1/checkpoint"], pinned=True),
    "dcn": dict(dir="ctr/dcn", data="dcn", script="local_train.py",
                args=["--num_thread", "1", "--batch_size", "100", "--print_steps", "5", "--steps", "410000",
                      "--dnn_hidden_units", "16", "16"],
                lines=None, count=0, saved=["models/epoch_1/checkpoint", "models/epoch_2/checkpoint"],
                pinned=True),
    "esmm": dict(dir="multi_task/esmm", data="esmm", script="train.py",
                 args=["--epochs", "1", "--batch_size", "64", "--embed_size", "4", "--cpu_num", "1", "--model_dir",
                       "./model_dir", "--train_data_path", "./train_data", "--vocab_path", "./vocab/vocab_size.txt"],
                 lines=None, count=0, saved=["model_dir/epoch_1/checkpoint"],
                 pinned="no: psjob's Adam on the is_sparse=True embedding's gradient takes Paddle's "
                        "bias correction (beta^(t+1), the next step's), yet after the epoch the saved fc "
                        "weights still differ from Paddle 1.8.5's by ~0.3% (sum of ctr_fc2_weight -34.58 "
                        "against -34.48): another difference in 1.8.5's non-lazy sparse Adam, not pinned down"),
    "mmoe": dict(dir="multi_task/mmoe", data="census", script="mmoe_train.py",
                 args=["--use_gpu", "0", "--train_data_path", "train_data", "--test_data_path", "test_data",
                       "--model_dir", "model_dir", "--feature_size", "499", "--batch_size", "32", "--expert_num",
                       "2", "--gate_num", "2", "--expert_size", "4", "--tower_size", "4", "--epochs", "2"],
                 lines=r"epoch_id:\d+,epoch_time:\S+ s,loss:\[([0-9.]+)\],train_auc_income:\[([0-9.]+)\],"
                       r"train_auc_marital:\[([0-9.]+)\],test_auc_income:\[([0-9.]+)\],"
                       r"test_auc_marital:\[([0-9.]+)\]", count=2,
                 saved=["model_dir/epoch_1/checkpoint", "model_dir/epoch_2/checkpoint"], pinned=True,
                 needs=["pandas"]),
    "share_bottom": dict(dir="multi_task/share_bottom", data="census", script="share_bottom.py",
                         args=["--use_gpu", "0", "--epochs", "2", "--train_data_path", "train_data",
                               "--test_data_path", "test_data", "--model_dir", "model_dir", "--batch_size", "32",
                               "--feature_size", "499", "--bottom_size", "8", "--tower_nums", "2",
                               "--tower_size", "4"],
                         lines=r"epoch_id:\d+,epoch_time:\S+ s,loss:\[([0-9.]+)\],train_auc_income:\[([0-9.]+)\],"
                               r"train_auc_marital:\[([0-9.]+)\],test_auc_income:\[([0-9.]+)\],"
                               r"test_auc_marital:\[([0-9.]+)\]", count=2,
                         saved=["model_dir/epoch_1/checkpoint", "model_dir/epoch_2/checkpoint"], pinned=True,
                 needs=["pandas"]),
    "din": dict(dir="ctr/din", data="din", script="train.py", args=["--epoch_num", "1", "--batch_size", "16"],
                lines=None, count=0, saved=[],
                pinned="random by design: reader.py shuffles the examples with an unseeded random.shuffle"),
    "word2vec": dict(dir="word2vec", data="word2vec", script="train.py",
                     args=["--train_data_dir", "data/train", "--dict_path", "data/dict", "--num_passes", "1",
                           "--batch_size", "100", "--model_output_dir", "models", "--base_lr", "1.0",
                           "--print_batch", "5", "--is_sparse"],
                     lines=r"TRAIN --> pass: 0 batch: \d+ loss: ([0-9.]+)", count=None, saved=[],
                     pinned="random by design: negative sampling and a shuffled reader"),
    # Sequence models over LoD batches (fluid.layers.dynamic_gru) on the data the examples ship
    # (train_data/, test_data/: 100 sessions of item ids each).
    "gru4rec": dict(dir="gru4rec", data=None, script="train.py",
                    args=["--pass_num", "1", "--hid_size", "16", "--batch_size", "5", "--print_batch", "2"],
                    # ce_mode: the example's continuous-evaluation switch, which reads the training
                    # sessions in file order (fluid.io.batch) instead of an unseeded fluid.io.shuffle
                    env={"ce_mode": "1"},
                    lines=r"step:\d+ ppl:([0-9.]+)", count=10, saved=[], pinned=True,
                    # then infer.py on the epoch's save_inference_model
                    infer=dict(script="infer.py", args=["--start_index", "1", "--last_index", "1"],
                               lines=r"step:\d+  recall@20:([0-9.]+)", count=20)),
    # gru4rec's sampled-negative variant (bpr_loss; --loss ce: softmax cross entropy), then
    # infer_sample_neg.py on its fluid.save.
    "gru4rec_sample_neg": dict(dir="gru4rec", data=None, script="train_sample_neg.py",
                               args=["--pass_num", "1", "--hid_size", "16", "--batch_size", "5", "--print_batch",
                                     "2"],
                               lines=r"step:\d+ ppl:([0-9.]+)", count=10, saved=["model_neg_recall20/epoch_1"],
                               pinned="random by design: dropout, and negatives drawn with numpy's unseeded "
                                      "np.random.shuffle",
                               infer=dict(script="infer_sample_neg.py",
                                          args=["--start_index", "1", "--last_index", "1", "--hid_size", "16"],
                                          lines=r"model:\S+ recall@20:([0-9.]+)", count=1)),
    "ssr": dict(dir="ssr", data=None, script="train.py",
                args=["--epochs", "1", "--hidden_size", "16", "--embedding_dim", "16", "--batch_size", "10",
                      "--print_batch", "2"],
                lines=r"avg_cost: ([0-9.e-]+), acc: ([0-9.]+)", count=5, saved=["model_output/epoch_1"],
                pinned="random by design: the reader draws each negative item with Python's unseeded "
                       "random.randint and shuffles with fluid.io.shuffle",
                infer=dict(script="infer.py", args=["--start_index", "1", "--last_index", "1", "--hid_size", "16",
                                                    "--emb_size", "16", "--batch_size", "10"],
                           lines=r"model:\S+ recall@20:([0-9.]+)", count=1)),
    # Convolutions over LoD sequences (fluid.nets.sequence_conv_pool) on the example's own data.
    "tagspace": dict(dir="tagspace", data=None, script="train.py",
                     args=["--pass_num", "1", "--batch_size", "50", "--print_batch", "2"],
                     lines=r"avg_cost: ([0-9.e-]+), acc: ([0-9.]+)", count=10, saved=[],
                     pinned="random by design: the reader draws the negative tags with numpy's unseeded "
                            "np.random.randint and shuffles with fluid.io.shuffle",
                     infer=dict(script="infer.py", args=["--start_index", "1", "--last_index", "1", "--batch_size",
                                                         "50"],
                                lines=r"epoch:\d+\tacc:([0-9.]+)", count=1)),
    # Random data by design (numpy's unseeded global RNG); each prints float(np.array(fetched)),
    # a one-element array NumPy 2.4 no longer converts (float_of_array: the test expects that).
    "dssm": dict(dir="dssm", data=None, script="dssm.py",
                 args=["--use_gpu", "0", "--batch_size", "16", "--TRIGRAM_D", "100", "--L1_N", "32", "--L2_N", "32",
                       "--L3_N", "16", "--Neg", "4", "--base_lr", "0.01", "--model_dir", "model_dir"],
                 lines=r"INFO - epoch_id: \d+, batch_time: \S+, loss: ([0-9.]+)", count=100, saved=[],
                 pinned="random by design: its data is numpy's unseeded np.random", float_of_array=True),
    "youbube_dnn": dict(dir="youbube_dnn", data=None, script="train.py",
                        args=["--use_gpu", "0", "--batch_size", "32", "--epochs", "2", "--watch_vec_size", "16",
                              "--search_vec_size", "16", "--other_feat_size", "16", "--output_size", "100",
                              "--model_dir", "model_dir", "--test_epoch", "1", "--base_lr", "0.01",
                              "--video_vec_path", "./video_vec.csv"],
                        lines=r"INFO - epoch_id: \d+, batch_time: \S+, loss: ([0-9.]+), acc: ([0-9.]+)", count=200,
                        saved=[], pinned="random by design: its data is numpy's unseeded np.random",
                        float_of_array=True, needs=["pandas"]),
    # A listwise reranker: sequence_unpad of a [batch, len] id column, embeddings, two dynamic_gru
    # directions with h_0, auc; then infer.py on the epoch's fluid.save checkpoint.
    "rerank_listwise": dict(dir="rerank/listwise", data=None, script="train.py",
                            args=["--use_gpu", "0", "--epochs", "1", "--batch_size", "32", "--model_dir", "model_dir",
                                  "--embd_dim", "16", "--hidden_size", "32", "--item_vocab", "200",
                                  "--user_vocab", "200", "--item_len", "5", "--sample_size", "20",
                                  "--base_lr", "0.01"],
                            lines=r"INFO - epoch_id: \d+, batch_time: \S+, loss: ([0-9.]+), auc: ([0-9.]+)",
                            count=20, saved=["model_dir/epoch_1/checkpoint"],
                            pinned="random by design: its data is numpy's unseeded np.random",
                            float_of_array=True,
                            infer=dict(script="infer.py",
                                       args=["--use_gpu", "0", "--model_dir", "model_dir", "--test_epoch", "1",
                                             "--batch_size", "32", "--embd_dim", "16", "--hidden_size", "32",
                                             "--item_vocab", "200", "--user_vocab", "200", "--item_len", "5",
                                             "--sample_size", "20"],
                                       lines=r"INFO - batch_time: \S+, loss: ([0-9.]+), auc: ([0-9.]+)", count=20)),
    # sequence_unpad then sequence_conv_pool, 100 SGD steps on numpy's unseeded random batches.
    "text_classification": dict(dir="text_classification", data=None, script="train.py", args=[],
                                lines=r"step\d+ cost=([0-9.]+)", count=100, saved=[],
                                pinned="random by design: its data is numpy's unseeded np.random",
                                float_of_array=True),
}


def results(spec, text):
    """The numbers of each result line `spec` prints, in order."""
    if not spec["lines"]:
        return []
    return [[float(x) for x in (m if isinstance(m, tuple) else (m,))] for m in re.findall(spec["lines"], text)]


def copy_inputs(work, infer):
    """The files infer.py reads, copied from the training run's (the same examples)."""
    import shutil
    for src, dst in infer.get("copy", []):
        os.makedirs(os.path.dirname(os.path.join(work, dst)), exist_ok=True)
        shutil.copyfile(os.path.join(work, src), os.path.join(work, dst))


def param_summary(prefix):
    """{parameter: [sum, sum of squares]} of a fluid.save's <prefix>.pdparams: Paddle 1.8's
    (a pickled dict) or psjob's (an .npz)."""
    path = prefix + ".pdparams"
    with open(path, "rb") as f:
        head = f.read(2)
    if head == b"PK":
        with np.load(path) as z:
            arrays = {n: z[n] for n in z.files}
    else:
        with open(path, "rb") as f:
            arrays = pickle.load(f)
    return {n: [float(np.sum(a, dtype=np.float64)), float(np.sum(np.square(a, dtype=np.float64)))]
            for n, a in arrays.items()}


WRITERS = {"deepfm": deepfm, "xdeepfm": xdeepfm, "dcn": dcn, "wide_deep": wide_deep, "din": din,
           "word2vec": word2vec, "ncf": ncf, "esmm": esmm, "census": census}

if __name__ == "__main__":
    print(WRITERS[sys.argv[1]](sys.argv[2]))
