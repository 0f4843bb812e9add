#!/usr/bin/env bash
# paddlerec_trainer.sh [MODEL]  — PaddleRec's own tools/static_ps_trainer.py under psjob launch.
#   MODEL  dnn (default) | wide_deep   (the rank models that ship a config_cpups.yaml)
#   AS_PADDLE=1: no file is changed at all (no import rewrite); the launch adds --as-paddle, so
#   `import paddle` is psjob in every process, and each process's log must say so.
#
# Unlike the shared userland run.sh, which runs run_dnn_ps.py (static_ps_trainer.py trimmed
# to the async QueueDataset path), this runs PaddleRec's trainer file itself, unmodified but
# for its import lines (the shared rewrite_imports.sh), with the model's own
# config_cpups.yaml (async CPU parameter server, QueueDataset with PaddleRec's pipe reader,
# use_auc) and PaddleRec's own command-line overrides (-o key=value) to fit a shared 2-core
# machine: 3 epochs, batch 32, 2 Hogwild threads per trainer (so stat_var_names are merged
# across threads), and the 80-line sample data ×10 in each of 2 files (every trainer reads
# both: split_file_list False). 1 pserver + 2 trainers under
#   psjob launch --server_num 1 --worker_num 2 tools/static_ps_trainer.py -m models/rank/<m>/config_cpups.yaml -o ...
#
# static_ps_trainer.py imports PaddleRec's tools/utils/utils_single.py (and through it
# tools/utils/envs.py), which the shared vendor/ lacks: they are vendored unchanged in
# tests/userland/paddlerec_trainer/ (see its README.md).
#
# The shared userland folder is found as $PSJOB_USERLAND, else as shared/userland in the
# nearest ancestor of this checkout that has one (../shared next to a checkout in CI).
# PY defaults to .venv/bin/python of this checkout; PADDLEREC_TIMEOUT (default 300 s)
# bounds the launch; KEEP_WORKDIR=1 keeps a passing run's work dir (a failing one is kept).
#
# Exit 0 only if: the launch exits 0 and both trainers log "Run Success, Exit."; each
# trainer printed the main program's _fleet_opt (DistMultiTrainer, and the two AUC
# statistics in stat_var_names); train_result_dict.txt (the trainer's own record) holds one
# global AUC per epoch, the last > 0.75 and not below the first; every epoch's inference
# model directory is non-empty; and the last one, loaded in a fresh process with psjob's
# paddle.static.load_inference_model, gives AUC > 0.75 on the sample data. Last line: the
# verdict "PADDLEREC-TRAINER psjob <model>: PASS|FAIL (...)".
set -u
MODEL=${1:-dnn}
case "$MODEL" in dnn|wide_deep) ;; *) echo "usage: paddlerec_trainer.sh [dnn|wide_deep]" >&2; exit 2 ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
AS_PADDLE=${AS_PADDLE:-0}
HOW=$([ "$AS_PADDLE" = 1 ] && echo "psjob-as-paddle" || echo "psjob")
verdict() { echo "PADDLEREC-TRAINER $HOW $MODEL: $1"; exit "$2"; }

USERLAND=${PSJOB_USERLAND:-}
if [ -z "$USERLAND" ]; then
  d=$ROOT
  while [ "$d" != / ]; do
    d=$(dirname "$d")
    if [ -d "$d/shared/userland/paddlerec" ]; then USERLAND=$d/shared/userland; break; fi
  done
fi
SRC=$USERLAND/paddlerec
[ -n "$USERLAND" ] && [ -f "$SRC/vendor/tools/static_ps_trainer.py" ] \
  || verdict "FAIL (no shared userland with paddlerec/vendor: set PSJOB_USERLAND)" 1
PY=${PY:-$ROOT/.venv/bin/python}
PY=$(cd "$(dirname "$PY")" 2>/dev/null && pwd)/$(basename "$PY")
[ -x "$PY" ] || verdict "FAIL (no interpreter at $PY)" 1
LIMIT=${PADDLEREC_TIMEOUT:-300}
SCRATCH=${PADDLEREC_SCRATCH:-/tmp/paddlerec-trainer}
EPOCHS=3 REPL=10

mkdir -p "$SCRATCH"
W=$(mktemp -d "$SCRATCH/run-$MODEL-XXXXXX")
# PaddleRec's root layout: tools/static_ps_trainer.py, tools/utils/{utils_single,envs}.py,
# tools/utils/static_ps/*, models/rank/<m>/*.
cp -r "$SRC/vendor/tools" "$SRC/vendor/models" "$W/"
cp "$HERE/paddlerec_trainer/tools/utils/utils_single.py" "$HERE/paddlerec_trainer/tools/utils/envs.py" "$W/tools/utils/"
MD=models/rank/$MODEL
mkdir -p "$W/$MD/data/bar_train"
for p in 0 1; do
  for i in $(seq $REPL); do cat "$SRC/vendor/$MD/data/sample_data/train/sample_train.txt"; done > "$W/$MD/data/bar_train/part-$p"
done
LAUNCH_FLAGS=()
if [ "$AS_PADDLE" = 1 ]; then
  LAUNCH_FLAGS=(--as-paddle)
  # Unmodified: every vendored file as shipped (utils_single.py/envs.py and the data are added).
  diff -rq "$SRC/vendor/tools" "$W/tools" | grep -v "^Only in $W" && verdict "FAIL (a vendored file differs)" 1
  diff -rq "$SRC/vendor/models" "$W/models" | grep -v "^Only in $W" && verdict "FAIL (a vendored file differs)" 1
  echo "no file changed; launched with --as-paddle"
else
  bash "$SRC/rewrite_imports.sh" "$W" || verdict "FAIL (import rewrite)" 1
  echo "rewritten import lines: $(diff -r "$SRC/vendor/tools" "$W/tools" 2>/dev/null | grep -c '^> .*import') in tools/," \
       "$(diff -r "$SRC/vendor/models" "$W/models" | grep -c '^> .*import') in models/"
fi

# PaddleRec's own third-party imports (pyyaml, six): from the interpreter, else a side dir.
unset PYTHONPATH
if ! "$PY" -c 'import yaml, six' 2>/dev/null; then
  DEPS=${PADDLEREC_DEPS:-$SCRATCH/deps}
  if ! PYTHONPATH="$DEPS" "$PY" -c 'import yaml, six' 2>/dev/null; then
    "$PY" -m pip install -q --no-compile --target "$DEPS" pyyaml six >"$W/deps.log" 2>&1 \
      || verdict "FAIL (cannot install pyyaml/six into $DEPS, see $W/deps.log)" 1
  fi
  export PYTHONPATH="$DEPS"
fi
export PATH="$(dirname "$PY"):$PATH"   # the pipe command says "python"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
unset PADDLE_TRAINING_ROLE TRAINING_ROLE PADDLE_PSERVERS_IP_PORT_LIST PADDLE_TRAINER_ID

cd "$W"
# Both trainers share this cwd and static_ps_trainer.py creates model_save_path when it is
# missing (os.makedirs, no exist_ok): made here first, so the two cannot race on it.
mkdir -p model_trainer
OPTS=(runner.epochs=$EPOCHS runner.thread_num=2 runner.train_batch_size=32
      runner.train_data_dir=data/bar_train runner.model_save_path=model_trainer runner.print_interval=50)
CMD=("$PY" -m psjob.cli launch "${LAUNCH_FLAGS[@]}" --server_num 1 --worker_num 2 --log_dir log --timeout "$LIMIT"
     tools/static_ps_trainer.py -m "$MD/config_cpups.yaml" -o "${OPTS[@]}")
echo "workdir $W"; echo "+ ${CMD[*]}"
start=$(date +%s)
timeout -k 10 "$LIMIT" "${CMD[@]}" >launch.log 2>&1 &
tpid=$!
wait $tpid
rc=$?
left=$(pgrep -d, -g $tpid)
left=$([ -n "$left" ] && ps -o pid=,stat=,args= -p "$left" | awk '$2 !~ /^Z/' | cut -c1-160)
if [ -n "$left" ]; then
  echo "stopping processes the run left behind:"; echo "$left" | sed 's/^/    /'
  kill -TERM -- -$tpid 2>/dev/null; sleep 3; kill -KILL -- -$tpid 2>/dev/null
fi
echo "launcher exit $rc after $(( $(date +%s) - start )) s (log $W/launch.log)"

# The check loads the saved model with PaddleRec's reader, which says `import paddle` when unmodified.
VERIFY=("$PY")
[ "$AS_PADDLE" = 1 ] && VERIFY=("$PY" -m psjob.cli as-paddle -- "$PY")
"${VERIFY[@]}" - "$W" "$MD" "$EPOCHS" "$rc" "$AS_PADDLE" <<'EOF'
import ast, os, re, sys
import numpy as np
import psjob
w, md, epochs, rc, as_paddle = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
problems = []
if rc != 0:
    problems.append(f"launcher exit {rc}")
if as_paddle:
    notice = f"paddle -> psjob {psjob.__version__} (--as-paddle)"
    for name in ("serverlog.0", "workerlog.0", "workerlog.1"):
        log = os.path.join(w, "log", name)
        if not (os.path.exists(log) and notice in open(log, errors="replace").read()):
            problems.append(f"{name}: no '{notice}' line")
for t in (0, 1):
    log = os.path.join(w, "log", f"workerlog.{t}")
    text = open(log, errors="replace").read() if os.path.exists(log) else ""
    if "Run Success, Exit." not in text:
        problems.append(f"trainer {t}: no 'Run Success, Exit.' in {log}")
        for line in [l for l in text.splitlines() if l.strip()][-8:]:
            print("    " + line[:300])
    opts = [l for l in text.splitlines() if l.startswith("{") and "'stat_var_names'" in l]
    if not opts:
        problems.append(f"trainer {t}: the printed _fleet_opt is missing")
    else:
        opt = ast.literal_eval(opts[-1])
        print(f"trainer {t}: _fleet_opt trainer={opt.get('trainer')} device_worker={opt.get('device_worker')} "
              f"stat_var_names={opt.get('stat_var_names')}")
        if opt.get("trainer") != "DistMultiTrainer" or len(opt.get("stat_var_names", [])) != 2:
            problems.append(f"trainer {t}: _fleet_opt {opt}")
path = os.path.join(w, "train_result_dict.txt")
if not os.path.exists(path):
    problems.append("train_result_dict.txt missing")
else:
    # str() of a dict whose AUCs are numpy scalars: "np.float64(0.99)" (numpy >= 2) becomes 0.99
    record = ast.literal_eval(re.sub(r"np\.\w+\(([^()]*)\)", r"\1", open(path).read()))
    aucs = [float(a) for a in record.get("auc", [])]
    print(f"train_result_dict: global auc per epoch {[round(a, 4) for a in aucs]}, "
          f"speed {[round(s) for s in record.get('speed', [])]} examples/s")
    if len(aucs) != epochs or len(record.get("speed", [])) != epochs:
        problems.append(f"train_result_dict: {len(aucs)} AUCs for {epochs} epochs")
    elif not (aucs[-1] > 0.75 and aucs[-1] >= aucs[0]):
        problems.append(f"train_result_dict: last-epoch AUC {aucs[-1]:.4f} (first {aucs[0]:.4f})")
for e in range(epochs):
    d = os.path.join(w, "model_trainer", str(e))
    if not (os.path.isdir(d) and os.listdir(d)):
        problems.append(f"inference model {d} missing or empty")
last = os.path.join(w, "model_trainer", str(epochs - 1))
if os.path.isdir(last) and os.listdir(last):
    # The saved model, as a user serves it: a fresh process, psjob's loader, PaddleRec's reader.
    import psjob as paddle
    sys.path.insert(0, os.path.join(w, md))
    import criteo_reader
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    program, feeds, fetches = paddle.static.load_inference_model(last, exe, model_filename=None,
                                                                 params_filename=None)
    sample = os.path.join(w, md, "data", "sample_data", "train", "sample_train.txt")
    rows = list(criteo_reader.RecDataset([sample], {"runner.inference": False}))  # labels kept
    column = {"label": 0, "dense_input": len(rows[0]) - 1, **{str(i): i for i in range(1, len(rows[0]) - 1)}}
    auc = None
    for b in range(0, len(rows), 16):
        batch = rows[b:b + 16]
        feed = {n: np.stack([r[column[n]] for r in batch]) for n in feeds}
        auc = float(np.asarray(exe.run(program, feed=feed, fetch_list=fetches)[0]).reshape(-1)[0])
    print(f"inference model {last}: feeds {len(feeds)}, AUC on the {len(rows)} sample lines {auc:.4f}")
    if not auc > 0.75:
        problems.append(f"the loaded inference model's AUC {auc:.4f} <= 0.75")
for p in problems:
    print("  - " + p)
if not problems:
    print("every check passed")
sys.exit(1 if problems else 0)
EOF
ok=$?
[ "${KEEP_WORKDIR:-0}" = 1 ] || [ $ok -ne 0 ] || rm -rf "$W"
[ $ok -eq 0 ] && verdict "PASS" 0
verdict "FAIL (workdir $W kept)" 1
