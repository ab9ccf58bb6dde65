"""Steps per second of the per-round Gymnasium loop of the LDP contextual agents, against a baseline.

One run, ``LDPLinearBandit-v0`` (d = 2, K = 10): ``act``, ``env.step``,
``observe`` in a Python loop, the way a Gymnasium user or stable-baselines3
drives an agent. The working tree and a baseline revision (exported with
``git archive`` into a temporary folder) run in two worker processes that
take turns, a short timing each, so that both see the same load on the
machine; the figures are the best timing of each side and the median ratio
of the pairs.

    python benchmarks/loop_speed.py [--baseline REV] [--pairs 16] [--steps 5000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AGENTS = ("LDP-LinUCB", "LDP-GLOC", "LDP-OLS", "LDP-SGD")


def worker() -> None:
    """Answer ``name steps`` lines on stdin with one timing each (after a warm-up of every
    agent, so that compiling is not timed)."""
    from glm_speed import loop_speed  # this folder's; imports the ldp_gym of PYTHONPATH

    from ldp_gym.agents import AGENTS as ALL

    classes = {name: ALL[name] for name in AGENTS}
    for cls in classes.values():
        loop_speed(cls, 500)
    print("ready", flush=True)
    for line in sys.stdin:
        name, steps = line.rsplit(maxsplit=1)
        print(loop_speed(classes[name], int(steps)), flush=True)


def export(rev: str, into: Path) -> Path:
    """The package at ``rev`` as an importable folder (``agents`` and ``wrappers`` moved under
    ``ldp_gym``, as the installed package has them)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    for sub in ("agents", "wrappers"):
        if (into / sub).is_dir() and not (into / "ldp_gym" / sub).exists():
            shutil.move(str(into / sub), str(into / "ldp_gym" / sub))
    return into


def start(path: Path | None) -> subprocess.Popen:
    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = str(path)
    proc = subprocess.Popen([sys.executable, __file__, "--worker"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env,
                            cwd=tempfile.gettempdir())
    if proc.stdout is None or proc.stdout.readline().strip() != "ready":
        raise SystemExit("loop_speed: a worker failed to start")
    return proc


def ask(proc: subprocess.Popen, name: str, steps: int) -> float:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(f"{name} {steps}\n")
    proc.stdin.flush()
    return float(proc.stdout.readline())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--baseline", default="1b0e961",
                   help="git revision to compare with (default: 1b0e961, the last revision "
                        "before the per-round path was rebuilt)")
    p.add_argument("--pairs", type=int, default=16, help="timings per side and agent")
    p.add_argument("--steps", type=int, default=5000, help="rounds per timing")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = start(export(args.baseline, Path(tmp)))
        new = start(None)
        print(f"{'agent':<12}{'baseline':>10}{'now':>10}{'ratio of bests':>16}{'median ratio':>14}"
              f"  (steps/s, best of {args.pairs}; baseline {args.baseline})")
        for name in AGENTS:
            old_t, new_t = [], []
            for i in range(args.pairs):  # alternate which side goes first
                first, second = (base, new) if i % 2 == 0 else (new, base)
                a, b = ask(first, name, args.steps), ask(second, name, args.steps)
                old_t.append(a if first is base else b)
                new_t.append(b if first is base else a)
            ratio = statistics.median(n / o for n, o in zip(new_t, old_t))
            print(f"{name:<12}{max(old_t):>10,.0f}{max(new_t):>10,.0f}"
                  f"{max(new_t) / max(old_t):>16.2f}{ratio:>14.2f}")
        for proc in (base, new):
            proc.terminate()


if __name__ == "__main__":
    if sys.argv[1:] == ["--worker"]:
        worker()
    else:
        main()
