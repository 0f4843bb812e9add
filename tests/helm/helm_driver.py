"""Drives real Helm (the helm-sdkpy bindings) for the chart tests.

Runs under .venv-helm's Python (helm-sdkpy needs >= 3.12; the test suite runs
on 3.11), so the tests call it as a subprocess:

    .venv-helm/bin/python tests/helm/helm_driver.py < plan.json

plan.json: {"kubeconfig": "<yaml text>", "steps": [step, ...]} where a step is
    {"action": "lint", "chart": PATH}
    {"action": "install" | "upgrade", "release": R, "namespace": NS, "chart": PATH, "values": {...}}
    {"action": "uninstall", "release": R, "namespace": NS}
It prints one JSON list to stdout: per step {"ok": true, "result": ...} or
{"ok": false, "error": "<type>: <message>"}. Steps run in order in one
process, so the releases live in Helm's in-memory storage driver
(HELM_DRIVER=memory, set by the caller) from install to upgrade to uninstall.
"""
import asyncio
import json
import sys

import helm_sdkpy

_CONFIGS: dict[str, helm_sdkpy.Configuration] = {}


def _config(namespace: str, kubeconfig: str) -> helm_sdkpy.Configuration:
    # One Configuration per namespace for the whole run: the memory storage
    # driver keeps its releases inside the Configuration.
    if namespace not in _CONFIGS:
        _CONFIGS[namespace] = helm_sdkpy.Configuration(namespace=namespace, kubeconfig=kubeconfig)
    return _CONFIGS[namespace]


async def _step(step: dict, kubeconfig: str) -> object:
    config = _config(step.get("namespace", "default"), kubeconfig)
    action = step["action"]
    if action == "lint":
        return await helm_sdkpy.Lint(config).run(step["chart"])
    if action == "install":
        return await helm_sdkpy.Install(config).run(
            step["release"], step["chart"], values=step.get("values") or None,
            wait=False, timeout=60, disable_openapi_validation=True)
    if action == "upgrade":
        return await helm_sdkpy.Upgrade(config).run(
            step["release"], step["chart"], values=step.get("values") or None,
            wait=False, timeout=60, reset_values=True, server_side_apply=False)
    if action == "uninstall":
        return await helm_sdkpy.Uninstall(config).run(step["release"], wait=False, timeout=60)
    raise ValueError(f"unknown helm driver action {action!r}")


def _summary(action: str, result: object) -> object:
    # Install/upgrade results carry the whole chart; keep what the tests read.
    if action in ("install", "upgrade") and isinstance(result, dict):
        return {"manifest": result.get("manifest", ""), "info": result.get("info", {}),
                "notes": (result.get("info") or {}).get("notes", "")}
    return result


async def main() -> None:
    plan = json.load(sys.stdin)
    outcomes = []
    for step in plan["steps"]:
        try:
            result = await _step(step, plan["kubeconfig"])
            outcomes.append({"ok": True, "result": _summary(step["action"], result)})
        except helm_sdkpy.HelmError as error:
            outcomes.append({"ok": False, "error": f"{type(error).__name__}: {error}"})
    json.dump(outcomes, sys.stdout)


if __name__ == "__main__":
    asyncio.run(main())
