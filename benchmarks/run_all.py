"""Run every benchmark once and write what they printed into ``docs/speed.md`` and the README.

One command, one run: each script of ``BENCHMARKS`` runs in its own process, in turn, with
the load average before it; ``docs/speed.md`` is rewritten whole (the machine, the versions,
and each benchmark's output verbatim, which carries its own yardsticks and ratios), and the
README's block between ``<!-- speed:start -->`` and ``<!-- speed:end -->`` gets the headline
outputs (the MAB rules, runs across cores, the T = 1e7 timings). Nothing in either place is
typed by hand: a figure there is one a script printed in this run. Usage::

    python benchmarks/run_all.py [--skip NAME ...] [--only NAME ...] [--dry-run]

``--dry-run`` runs each benchmark at a tiny size (to check the pipeline) and writes to a
temporary copy instead of the documentation. The full run takes about half an hour on 2 cores;
let the machine be idle, or say so: the load average is in the page.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: name, arguments, arguments of a dry run, whether the README shows it
BENCHMARKS: list[tuple[str, list[str], list[str], bool]] = [
    ("mab_speed", [], ["--runs", "4", "--horizon", "2000", "--repeat", "1"], True),
    ("parallel_speed", ["--horizon", "1000000", "--chunks"],
     ["--runs", "120", "--horizon", "2000", "--repeat", "1"], True),
    ("runner_speed", [], ["--runs", "20", "--horizon", "200", "--loop-steps", "500",
                          "--repeat", "1"], False),
    ("glm_speed", [], ["--horizon", "2000", "--repeat", "1"], False),
    ("glm_limits", [], ["--runs", "4", "--horizon", "400", "--repeat", "1"], True),
    ("bco_limits", [], ["--runs", "4", "--horizon", "600", "--repeat", "1"], False),
    ("combinatorial_limits", [], ["--runs", "4", "--horizon", "200", "--repeat", "1"], False),
    ("nonparametric_limits", [], ["--runs", "4", "--horizon", "2000", "--repeat", "1"], False),
    ("bco_speed", [], ["--runs", "4", "--horizon", "600", "--repeat", "1"], False),
    ("combinatorial_speed", [], ["--runs", "4", "--horizon", "200", "--repeat", "1"], False),
    ("elimination_speed", [], ["--runs", "4", "--horizon", "2000", "--repeat", "1"], False),
    ("loop_speed", ["--baseline", "1a7a92b"],  # the revision before this engine's changes
     ["--baseline", "1a7a92b", "--pairs", "1", "--steps", "200"], False),
    ("headline", [], ["--horizon", "2000", "--runs", "4", "--skip-experiment"], True),
]

START, END = "<!-- speed:start -->", "<!-- speed:end -->"


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        names = re.findall(r"model name\s*:\s*(.+)", Path("/proc/cpuinfo").read_text())
        cpu = names[0].strip() if names else cpu
    except OSError:
        pass
    import numba
    import numpy

    import ldp_gym
    return (f"{cpu}, {os.cpu_count()} cores; Python {platform.python_version()}, numpy "
            f"{numpy.__version__}, numba {numba.__version__}, ldp-gym {ldp_gym.__version__}")


def run(name: str, args: list[str]) -> tuple[str, float, float]:
    """``(output, load average before, wall seconds)`` of one benchmark."""
    load = os.getloadavg()[0]
    start = time.perf_counter()
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / f"{name}.py"), *args],
                          cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"benchmarks/{name}.py failed:\n{done.stderr}")
    return done.stdout.rstrip(), load, time.perf_counter() - start


def section(name: str, args: list[str], output: str, load: float, seconds: float) -> str:
    doc = subprocess.run([sys.executable, "-c", f"import ast,sys; print(ast.get_docstring("
                          f"ast.parse(open('benchmarks/{name}.py').read())).split(chr(10)*2)[0])"],
                         cwd=ROOT, capture_output=True, text=True).stdout.strip()
    command = " ".join(["python", f"benchmarks/{name}.py", *args])
    return (f"### `{name}.py`\n\n{doc}\n\n`{command}` (load average {load:.2f} before it, "
            f"{seconds:.0f} s):\n\n```text\n{output}\n```\n")


def page(sections: list[str], when: str) -> str:
    return f"""# Speed

Every figure on this page was printed by a script of `benchmarks/` in one run of
`python benchmarks/run_all.py` ({when}), which rewrites this page and the README's speed
block; nothing here is typed by hand. Each benchmark carries its yardsticks and prints its
ratios against them from the same invocation, so the ratios travel between machines better
than the seconds do. On a shared machine both move from one invocation to the next: the
seconds by up to a third, the ratios by up to a quarter (UCB1's share of the limit read 51 %,
55 % and 75 % in three runs of this script on 2026-11-27, its code unchanged), and now and
then by half: in two runs with the same code, LDP-UCB's share read 82 % and 40 %, ABSE's
44 % and 56 % (67 % run alone just after). Those jumps were in the ldp-gym column, whose
runs then used two threads (the next block drawn in a second thread), not in the
single-threaded yardsticks. Since then every column of a yardstick row is timed on one core,
where ldp-gym draws ahead in the thread that plays, as in a parallel run's workers. Read a
ratio near a target as a range; the load average before each benchmark is given with it.

Machine: {machine()}.

Yardsticks: "numpy" is the algorithm written over runs in plain vectorised numpy as a user
would; "limit" is one numba function doing ldp-gym's arithmetic with the same draws; "loop"
is the textbook Gymnasium loop of one env and one run (`act`, `step`, `observe`). The
published code of the papers is not run here: the figures quoted for it come from the
papers and are marked so.

Where the speed comes from ([architecture](architecture.md)): batch-first agents on native
vector envs; blocks of rounds drawn ahead, in a background thread while the agent's
compiled kernel plays the previous block where a core is spare (one worker on several
cores; `ldp_gym.background`); committed episodes played as exact binomial sums (T = 1e7
costs O(K log T) decisions per run for AdaP-UCB, AdaP-KLUCB and DP-SE); an agent's runs cut
into chunks of 50 that run in parallel processes (`n_jobs`), bitwise the same results for
any number of workers.

{chr(10).join(sections)}"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    names = [b[0] for b in BENCHMARKS]
    p.add_argument("--only", nargs="+", choices=names, default=names)
    p.add_argument("--skip", nargs="+", choices=names, default=[])
    p.add_argument("--dry-run", action="store_true")
    args = p.parse_args()
    sections, readme = [], []
    for name, full, tiny, shown in BENCHMARKS:
        if name not in args.only or name in args.skip:
            continue
        used = tiny if args.dry_run else full
        print(f"benchmarks/{name}.py {' '.join(used)} ...", flush=True)
        output, load, seconds = run(name, used)
        sections.append(section(name, used, output, load, seconds))
        if shown:
            readme.append(f"`python benchmarks/{name}.py{''.join(' ' + a for a in used)}`:\n\n"
                          f"```text\n{output}\n```\n")
    when = datetime.date.today().isoformat()
    out = Path(tempfile.mkdtemp()) if args.dry_run else ROOT
    (out / "docs").mkdir(exist_ok=True)
    (out / "docs" / "speed.md").write_text(page(sections, when))
    text = (ROOT / "README.md").read_text()
    if START in text and END in text and readme:
        head, rest = text.split(START, 1)
        block = (f"{START}\nMeasured by `python benchmarks/run_all.py` on {when} ({machine()}); "
                 f"every benchmark, with its yardsticks, in [docs/speed.md](docs/speed.md).\n\n"
                 + "\n".join(readme) + END)
        (out / "README.md").write_text(head + block + rest.split(END, 1)[1])
    print(f"wrote {out / 'docs' / 'speed.md'} and the README's speed block in {out}")


if __name__ == "__main__":
    main()
