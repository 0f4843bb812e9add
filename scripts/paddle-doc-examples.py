#!/usr/bin/env python3
"""Run Paddle's own API examples under real Paddle and under `psjob as-paddle`, side by side.

    scripts/paddle-doc-examples.py --module paddle.static --module paddle.static.nn --out DIR
        [--paddle-python /tmp/probe/vpaddle300/bin/python] [--filter REGEX] [--timeout 60]

Paddle documents each public API with runnable examples (``>>>`` doctest lines in its
docstrings; Paddle 1.x's are indented code blocks, https://www.paddlepaddle.org.cn/documentation/docs/en/api/index_en.html). This
tool reads them at run time from an installed Paddle (nothing of Paddle's is kept in this
repository), writes each example to DIR/examples/, runs it in a fresh directory under both,
and classifies it:

  same           both exit 0 and print the same (numbers compared to 4 significant digits)
  differs        both exit 0, the printed output differs
  psjob-fails    Paddle exits 0, psjob does not (the last line of psjob's error)
  paddle-fails   Paddle itself fails here (no GPU, no cluster, a stale example): not a verdict
  skipped        the example asks for a GPU/XPU or another device this machine lacks

DIR/report.md lists them (the failures with their errors), DIR/report.json has every run's
output. A compatibility probe for developers, not a test: CI has no Paddle.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_PADDLE = "/tmp/probe/vpaddle300/bin/python"

# Runs under the Paddle interpreter: prints {qualified name: [example source, ...]} as JSON.
_COLLECT = r'''
import importlib, inspect, json, re, sys
modules, filt = json.loads(sys.argv[1]), re.compile(sys.argv[2])

def examples(doc):
    """Each `.. code-block:: python` block's source: its `>>>`/`...` lines (Paddle 2.x/3.x), or
    the indented block itself (Paddle 1.x's examples carry no prompts)."""
    text = doc or ""
    parts = re.split(r"\.\. code-block:: python[^\n]*\n", text)
    found = []
    for part in parts[1:]:
        src = []
        for line in part.splitlines():
            s = line.strip()
            if s.startswith(">>> ") or s == ">>>":
                src.append(s[4:])
            elif (s.startswith("... ") or s == "...") and src:
                src.append(s[4:])
        if not src:
            lines = part.splitlines()
            while lines and not lines[0].strip():
                lines.pop(0)
            if not lines:
                continue
            indent = len(lines[0]) - len(lines[0].lstrip())
            if indent == 0:
                continue
            block = []
            for line in lines:
                if line.strip() and len(line) - len(line.lstrip()) < indent:
                    break
                block.append(line[indent:] if line.strip() else "")
            src = block
        if src:
            found.append("\n".join(src).rstrip())
    return found

result = {}
for name in modules:
    mod = importlib.import_module(name)
    public = getattr(mod, "__all__", None) or [k for k in dir(mod) if not k.startswith("_")]
    for attr in public:
        obj = getattr(mod, attr, None)
        if obj is None:
            continue
        targets = [(f"{name}.{attr}", obj)]
        if inspect.isclass(obj):
            for m, member in vars(obj).items():
                if not m.startswith("_") and (inspect.isfunction(member) or isinstance(member, property)):
                    targets.append((f"{name}.{attr}.{m}", member))
        for qual, o in targets:
            if not filt.search(qual):
                continue
            doc = o.__doc__ if not isinstance(o, property) else (o.fget.__doc__ if o.fget else None)
            srcs = examples(doc)
            if srcs:
                result[qual] = srcs
print(json.dumps(result))
'''

_DEVICE = re.compile(r"doctest:\s*\+REQUIRES\(env:\s*(GPU|XPU|DISTRIBUTED|CUSTOM_DEVICE|IPU|NPU)", re.I)
_NUMBER = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?|-?\d+e[-+]?\d+", re.I)


def _normal(text: str) -> str:
    """Output with numbers rounded to 4 significant digits and addresses/timings dropped."""
    text = re.sub(r"0x[0-9a-f]+", "0x", text)
    text = _NUMBER.sub(lambda m: f"{float(m.group(0)):.4g}", text)
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def _run(cmd: list[str], timeout: float, env: dict[str, str]) -> dict:
    with tempfile.TemporaryDirectory(prefix="doc-example-") as cwd:
        try:
            p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
            return {"rc": p.returncode, "out": p.stdout[-20000:], "err": p.stderr[-6000:]}
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            return {"rc": "timeout", "out": out[-20000:], "err": f"timed out after {timeout} s"}


def _last_error(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.strip() and not ln.startswith(("W", "I"))
             or re.match(r"^\w*(Error|Exception)\b", ln)]
    for line in reversed(lines):
        if re.search(r"(Error|Exception|error:)", line):
            return line.strip()[:300]
    return (lines[-1].strip() if lines else "(no message)")[:300]


def classify(paddle: dict, psjob: dict) -> str:
    if paddle["rc"] != 0:
        return "paddle-fails"
    if psjob["rc"] != 0:
        return "psjob-fails"
    return "same" if _normal(paddle["out"]) == _normal(psjob["out"]) else "differs"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--module", action="append", required=True, help="a Paddle module, e.g. paddle.static")
    ap.add_argument("--out", required=True)
    ap.add_argument("--paddle-python", default=DEFAULT_PADDLE)
    ap.add_argument("--psjob-python", default=os.path.join(REPO, ".venv", "bin", "python"))
    ap.add_argument("--filter", default="", help="only qualified names matching this regex")
    ap.add_argument("--timeout", type=float, default=60.0)
    # Paddle 3's static graph defaults to PIR, whose Values several of its own static examples
    # reject; psjob's Program is the legacy one, so the legacy graph is the like-for-like side.
    ap.add_argument("--paddle-env", action="append", default=["FLAGS_enable_pir_api=0"],
                    help="KEY=VALUE for the Paddle side only (default FLAGS_enable_pir_api=0)")
    args = ap.parse_args(argv)

    base_env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1", CUDA_VISIBLE_DEVICES="")
    collected = subprocess.run([args.paddle_python, "-c", _COLLECT, json.dumps(args.module), args.filter],
                               env=base_env, capture_output=True, text=True, check=False)
    if collected.returncode != 0:
        sys.exit(f"collecting the examples under {args.paddle_python} failed:\n{collected.stderr[-3000:]}")
    found: dict[str, list[str]] = json.loads(collected.stdout.strip().splitlines()[-1])

    examples_dir = os.path.join(args.out, "examples")
    os.makedirs(examples_dir, exist_ok=True)
    paddle_env = dict(base_env, **dict(kv.split("=", 1) for kv in args.paddle_env))
    psjob_env = dict(base_env, PYTHONPATH=os.path.join(REPO, "runtime"))
    runs = []
    for qual, sources in sorted(found.items()):
        for i, src in enumerate(sources):
            path = os.path.join(examples_dir, f"{qual}.{i}.py")
            with open(path, "w") as f:
                f.write(src + "\n")
            entry = {"name": qual, "index": i, "file": path}
            device = _DEVICE.search(src)
            if device:
                entry.update(verdict="skipped", why=f"requires {device.group(1)}")
            else:
                entry["paddle"] = _run([args.paddle_python, path], args.timeout, paddle_env)
                entry["psjob"] = _run([args.psjob_python, "-m", "psjob.cli", "as-paddle", args.psjob_python, path],
                                      args.timeout, psjob_env)
                entry["verdict"] = classify(entry["paddle"], entry["psjob"])
                if entry["verdict"] == "psjob-fails":
                    entry["why"] = _last_error(entry["psjob"]["err"])
                elif entry["verdict"] == "paddle-fails":
                    entry["why"] = _last_error(entry["paddle"]["err"])
            runs.append(entry)
            print(f"{entry['verdict']:13} {qual} [{i}] {entry.get('why', '')}", flush=True)

    with open(os.path.join(args.out, "report.json"), "w") as f:
        json.dump(runs, f, indent=1)
    counts: dict[str, int] = {}
    for r in runs:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    lines = [f"# Paddle's examples of {', '.join(args.module)} under psjob", "",
             ", ".join(f"{k} {v}" for k, v in sorted(counts.items())), ""]
    for verdict in ("psjob-fails", "differs", "paddle-fails", "skipped", "same"):
        chosen = [r for r in runs if r["verdict"] == verdict]
        if chosen:
            lines += [f"## {verdict} ({len(chosen)})", ""]
            lines += [f"- `{r['name']}` [{r['index']}] {r.get('why', '')}" for r in chosen] + [""]
    with open(os.path.join(args.out, "report.md"), "w") as f:
        f.write("\n".join(lines))
    print(", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
