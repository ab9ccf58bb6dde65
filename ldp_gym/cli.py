"""The ``ldp-gym`` command line: ``list``, ``run`` and ``reproduce``.

A user error prints one line (``ldp-gym: error: ...``) and exits with code 2,
before any work where it can be checked in advance; Ctrl-C prints
``ldp-gym: interrupted`` and exits with code 130. Results are written into a
temporary sibling folder that is renamed to the output folder only when
everything succeeded, so nothing is ever half-written, and a failed run leaves
no folder behind.

Every results folder holds a marker (``.ldp-gym-results``) listing the files
ldp-gym wrote. ``--force`` replaces an existing output folder only when it is
empty or holds that marker and nothing but the files it lists, never ``.``,
``/``, the home folder, a parent of the working folder or a symbolic link; the
new folder is complete before the old one is removed.

Examples::

    ldp-gym list
    ldp-gym run LDPMAB-v0 --agents UCB1,AdaP-KLUCB --epsilon 0.5,1 --horizon 10000 --runs 10
    ldp-gym reproduce azize2022-fig2 --quick --out results/fig2
"""

from __future__ import annotations

import argparse
import json
import math
import os
import secrets
import shutil
import signal
import sys
from pathlib import Path
from typing import Any, Callable, NoReturn

__all__ = ["main"]

#: the marker file of a results folder: what ldp-gym wrote there (``--force`` checks it)
MARKER = ".ldp-gym-results"


class UserError(Exception):
    """A mistake in the command line: one line on stderr, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2 (argparse prints usage too)
        raise UserError(message)


# ---------------------------------------------------------------------------------- arguments
def _int_at_least(name: str, low: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{name} must be >= {low}, got {value}")
        return value
    return parse


def _jobs(text: str) -> int:
    value = _int_at_least("jobs", -1)(text)
    if value == 0:
        raise argparse.ArgumentTypeError("jobs must be >= 1 or -1 (all cores), got 0")
    return value


def _epsilons(text: str) -> list[float]:
    out = []
    for part in text.split(","):
        try:
            e = float(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"epsilon must be numbers, got {part!r}") from None
        if not math.isfinite(e) or e <= 0:
            raise argparse.ArgumentTypeError(f"epsilon must be finite and > 0, got {part!r}")
        out.append(e)
    return out


def _delta(text: str) -> float:
    try:
        d = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"delta must be a number, got {text!r}") from None
    if not 0 < d < 1:  # also refuses nan
        raise argparse.ArgumentTypeError(f"delta must be in (0, 1), got {text!r}")
    return d


#: the Gaussian wrapper's delta when --delta is not given
WRAPPER_DELTA = 1e-5
#: the rough wall-clock time of ``reproduce NAME --quick`` (measured on 2 cores, --jobs 2)
QUICK_DURATION = ("about 5 s to 2 min per experiment, mab-local-vs-global the longest (measured "
                  "on 2 cores, one of them busy)")


def _parser() -> _Parser:
    from ldp_gym import __version__

    p = _Parser(prog="ldp-gym", description="Differentially private bandits: envs, agents, "
                                            "experiments.")
    p.add_argument("--version", action="version", version=f"ldp-gym {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser,
                           metavar="{list,run,reproduce}")
    sub.add_parser("list", help="environment ids, agents and experiments")
    r = sub.add_parser("run", help="run agents on an environment")
    r.add_argument("env", help="environment id, e.g. LDPMAB-v0 (required; see list)")
    r.add_argument("--agents", required=True,
                   help="comma-separated agent names (required, no default; see list)")
    r.add_argument("--epsilon", type=_epsilons, default=None,
                   help="comma-separated privacy budgets of the private agents and the wrapper "
                        "(default 1; an error when no agent or wrapper is private)")
    r.add_argument("--wrapper", choices=["none", "laplace", "gaussian"], default="none",
                   help="privatise the rewards of the non-private agents (one-point reduction; "
                        "default none)")
    r.add_argument("--delta", type=_delta, default=None,
                   help=f"delta in (0, 1) of the Gaussian wrapper (default {WRAPPER_DELTA:g}) and "
                        "of the (epsilon, delta)-DP agents (default their own, 0.01); an error "
                        "when nothing uses it")
    r.add_argument("--horizon", type=_int_at_least("horizon", 1), default=10_000,
                   help="rounds per run (default 10000)")
    r.add_argument("--runs", type=_int_at_least("runs", 1), default=10,
                   help="independent runs per agent (default 10)")
    r.add_argument("--seed", type=_int_at_least("seed", 0), default=0,
                   help="root seed, an integer >= 0 (default 0)")
    r.add_argument("--jobs", type=_jobs, default=1,
                   help="parallel processes over agents, -1 for all cores (default 1)")
    r.add_argument("--out", type=Path, default=Path("ldp-gym-results/run"),
                   help="output folder, must not exist unless --force "
                        "(default ldp-gym-results/run)")
    r.add_argument("--force", action="store_true",
                   help="replace an existing output folder that ldp-gym wrote (default off)")
    r.add_argument("--quiet", action="store_true", help="no progress bars (default off)")
    r.add_argument("--secure", action="store_true",
                   help="draw all privacy noise from the OS CSPRNG (deployment: the noise cannot "
                        "be replayed, so results are not reproducible; --seed then only drives "
                        "the envs and the agents' public decisions; default off)")
    e = sub.add_parser("reproduce", help="reproduce a paper's experiment")
    e.add_argument("name", help="experiment name (required; see list)")
    e.add_argument("--quick", action="store_true",
                   help=f"a smaller version: {QUICK_DURATION} (default off: the paper's sizes, "
                        "hours for some)")
    e.add_argument("--seed", type=_int_at_least("seed", 0), default=0,
                   help="root seed, an integer >= 0 (default 0)")
    e.add_argument("--jobs", type=_jobs, default=2,
                   help="parallel processes, -1 for all cores (default 2)")
    e.add_argument("--out", type=Path, default=None,
                   help="output folder, must not exist unless --force "
                        "(default ldp-gym-results/NAME)")
    e.add_argument("--force", action="store_true",
                   help="replace an existing output folder that ldp-gym wrote (default off)")
    e.add_argument("--quiet", action="store_true", help="no progress bars (default off)")
    e.add_argument("--resume", action="store_true",
                   help="skip the tasks that an interrupted or failed run of the same command "
                        "finished: each finished task is kept in .OUT.resume/ next to the output "
                        "folder OUT until the results are written (default off: a run starts "
                        "afresh, and refuses to start while .OUT.resume/ exists)")
    return p


# ------------------------------------------------------------------------------ output folder
def _protected(path: Path) -> str | None:
    """Why ``--force`` must never replace ``path`` (resolved), or None."""
    if path == Path(path.anchor):
        return "the root folder"
    try:
        if path == Path.home().resolve():
            return "the home folder"
    except (RuntimeError, KeyError):  # no home folder known
        pass
    cwd = Path.cwd().resolve()
    if path == cwd:
        return "the working folder"
    if path in cwd.parents:
        return "a parent of the working folder"
    return None


def _entries(folder: Path) -> set[str]:
    """Every file and folder under ``folder``, as relative POSIX paths."""
    out = set()
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            out.add((Path(root) / name).relative_to(folder).as_posix())
    return out


def _check_replaceable(out: Path) -> None:
    """Refuse ``--force`` on anything ldp-gym did not write entirely (see the module doc); a
    symbolic link was refused by :func:`_check_out`, its only caller."""
    why = _protected(out.resolve())
    if why:
        raise UserError(f"--force refuses to replace {out}: it is {why}")
    entries = _entries(out)
    if not entries:
        return
    marker = out / MARKER
    written: set[str] = set()
    if marker.is_file() and not marker.is_symlink():
        try:
            written = set(json.loads(marker.read_text())["files"])
        except (OSError, ValueError, KeyError, TypeError):
            written = set()
    else:
        raise UserError(f"--force refuses to replace {out}: ldp-gym did not write it (no {MARKER} "
                        "marker); remove it yourself or choose another --out")
    others = sorted(entries - written - {MARKER})
    if others:
        raise UserError(f"--force refuses to replace {out}: it holds {others[0]!r}, which ldp-gym "
                        "did not write; remove it yourself or choose another --out")


def _check_out(out: Path, force: bool) -> None:
    """Everything about ``--out`` that can be checked before the run."""
    if out.is_symlink():
        raise UserError(f"--out {out} is a symbolic link; name a folder")
    if out.exists():
        if not out.is_dir():
            raise UserError(f"--out {out} is a file, not a folder")
        if not force:
            raise UserError(f"--out {out} exists; choose another folder or pass --force "
                            "(which replaces only a folder ldp-gym wrote)")
        _check_replaceable(out)
    parent = out.absolute().parent
    while not parent.exists() and not parent.is_symlink():
        parent = parent.parent
    if not parent.is_dir():
        raise UserError(f"--out {out}: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"--out {out}: cannot write in {parent} (permission denied)")


class _Output:
    """The temporary sibling folder of ``out``, published by one rename (see the module doc)."""

    def __init__(self, out: Path, force: bool):
        _check_out(out, force)
        self.out, self.force = out, force
        self.created: list[Path] = []  # the missing parents made here, removed on failure
        missing = []
        parent = out.absolute().parent
        while not parent.exists():
            missing.append(parent)
            parent = parent.parent
        try:
            for folder in reversed(missing):
                folder.mkdir()  # the user's umask applies
                self.created.append(folder)
            self.tmp = self._sibling("tmp")
            self.tmp.mkdir()
        except OSError as exc:
            self.discard()
            raise UserError(f"--out {out}: {exc.strerror or exc}") from None

    def _sibling(self, kind: str) -> Path:
        return self.out.absolute().parent / f".{self.out.name}.{kind}-{secrets.token_hex(4)}"

    def publish(self) -> list[str]:
        """Mark the folder, then rename it to ``out`` (replacing an old one only with force)."""
        files = sorted(_entries(self.tmp))
        (self.tmp / MARKER).write_text(json.dumps(
            {"written_by": "ldp-gym", "files": files,
             "note": "ldp-gym --force replaces this folder only while it holds these files "
                     "and nothing else"}, indent=1) + "\n")
        out = self.out
        if out.exists() or out.is_symlink():  # also when it appeared during the run
            _check_out(out, self.force)
            old = self._sibling("old")
            out.rename(old)
            try:
                self.tmp.rename(out)
            except OSError:
                old.rename(out)
                raise
            shutil.rmtree(old)
        else:
            self.tmp.rename(out)
        self.created = []
        return files

    def discard(self) -> None:
        """Remove the temporary folder and the parents made for it (if still empty)."""
        tmp = getattr(self, "tmp", None)
        if tmp is not None and tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        for folder in reversed(self.created):
            try:
                folder.rmdir()
            except OSError:
                break
        self.created = []


def _quiet_workers() -> None:
    """Start joblib's worker processes with SIGINT blocked: Ctrl-C reaches the whole process
    group, and a worker still importing would print a traceback; the main process alone
    handles it (one line, exit code 130) and joblib stops the workers."""
    try:
        from joblib.externals.loky.backend import fork_exec as module
    except ImportError:  # no joblib: runs are sequential
        return
    spawn = module.fork_exec
    if getattr(spawn, "_ldp_gym", False):
        return

    def fork_exec(*args: Any, **kwargs: Any) -> Any:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            return spawn(*args, **kwargs)
        finally:  # a Ctrl-C during the spawn is delivered here, in the main process
            signal.pthread_sigmask(signal.SIG_SETMASK, old)

    fork_exec._ldp_gym = True  # type: ignore[attr-defined]
    module.fork_exec = fork_exec


def _write(out: Path, force: bool, work: Callable[[Path], None]) -> list[str]:
    """Run ``work(folder)`` into a temporary folder and publish it as ``out``; nothing is left
    behind on any failure (errors, Ctrl-C)."""
    target = _Output(out, force)
    try:
        if hasattr(signal, "pthread_sigmask"):
            _quiet_workers()
        work(target.tmp)
        return target.publish()
    except OSError as exc:
        raise UserError(f"cannot write {out}: {exc}") from None
    finally:
        target.discard()


# ----------------------------------------------------------------------------------- commands
def _cmd_list() -> None:
    import ldp_gym
    from ldp_gym.agents import AGENTS
    from ldp_gym.experiments import EXPERIMENTS

    print("environments:")
    for env_id in ldp_gym.ENV_SPECS:
        print(f"  {env_id}")
    print("agents:")
    for name, cls in AGENTS.items():
        kind = "private (needs --epsilon)" if _is_private(cls) else "non-private"
        print(f"  {name:<14} {cls.__module__.split('.')[-1]:<6} {kind}")
    print("experiments:")
    for name, exp in EXPERIMENTS.items():
        print(f"  {name:<22} {exp.description}")


def _is_private(cls: type) -> bool:
    from ldp_gym.agents.base import GlobalDPAgent, LocalDPAgent

    return issubclass(cls, (LocalDPAgent, GlobalDPAgent))


def _cmd_run(args: argparse.Namespace) -> None:
    import gymnasium as gym

    import ldp_gym
    from ldp_gym.agents import AGENTS
    from ldp_gym.wrappers.reward import VectorGaussianReward, VectorLaplaceReward

    if args.env not in gym.registry or args.env not in ldp_gym.ENV_SPECS:
        raise UserError(f"env {args.env!r} is unknown; `ldp-gym list` shows the ids")
    by_lower = {k.lower(): v for k, v in AGENTS.items()}
    names = [a.strip() for a in args.agents.split(",") if a.strip()]
    if not names:
        raise UserError("--agents names no agent")
    unknown = [a for a in names if a.lower() not in by_lower]
    if unknown:
        raise UserError(f"--agents: unknown agent {unknown[0]!r}; `ldp-gym list` shows them")
    private = {a: by_lower[a.lower()] for a in names if _is_private(by_lower[a.lower()])}
    plain = {a: by_lower[a.lower()] for a in names if a not in private}
    wrapped = bool(plain) and args.wrapper != "none"
    # options that do not apply are errors, not silently ignored
    if args.wrapper != "none" and not plain:
        raise UserError(f"--wrapper {args.wrapper}: every agent is private already (the wrapper "
                        "privatises the rewards of non-private agents)")
    if args.epsilon is not None and not private and not wrapped:
        raise UserError("--epsilon: no agent is private and no --wrapper is given, so nothing "
                        "uses it")
    if args.secure and not private and not wrapped:
        raise UserError("--secure: no agent or wrapper draws privacy noise (name a private "
                        "agent or pass --wrapper)")
    epsilons = args.epsilon or [1.0]
    try:
        probe = ldp_gym.make_vector_env(args.env, 1, args.horizon)
    except ImportError as exc:  # an optional extra the env needs (scikit-learn's datasets)
        raise UserError(str(exc)) from None
    # validate every agent's parameters before any work (errors name the parameter), and find
    # the (epsilon, delta)-DP agents, the ones --delta applies to
    def build(cls: Any, **kw: Any) -> Any:
        try:
            return cls.from_env(probe, secure=args.secure, **kw)
        except (ValueError, TypeError) as exc:
            raise UserError(f"{_label(cls)}: {exc}") from None

    approximate = set()
    for name, cls in {**private, **plain}.items():
        agent = build(cls, **({"epsilon": epsilons[0]} if name in private else {}))
        if name in private and (getattr(agent, "delta", 0.0) or 0.0) > 0:
            approximate.add(name)
    if args.delta is not None and not approximate and not (wrapped and args.wrapper == "gaussian"):
        raise UserError("--delta: nothing uses it (no (epsilon, delta)-DP agent and no "
                        "--wrapper gaussian)")
    lower, upper = probe.unwrapped.core.bounded_rewards or (0.0, 1.0)
    tasks: list[dict[str, Any]] = []
    common = dict(env=args.env, horizon=args.horizon, n_runs=args.runs, seed=args.seed,
                  progress=False if args.quiet else None, n_jobs=args.jobs, secure=args.secure)
    for eps in epsilons:
        agents = {}
        for name, cls in private.items():
            params: dict[str, Any] = {"epsilon": eps}
            if name in approximate and args.delta is not None:
                params["delta"] = args.delta
            agents[f"{_label(cls)} eps={eps:g}"] = (cls, params)
        if agents:
            tasks.append(dict(common, agents=agents))
        if wrapped:
            # rewards are clipped to the bounds the setting declares (BCO: [-B, B]), else [0, 1]
            bounds = {"lower": lower, "upper": upper}
            delta = WRAPPER_DELTA if args.delta is None else args.delta
            wrapper = (VectorLaplaceReward, {"epsilon": eps, **bounds}) \
                if args.wrapper == "laplace" \
                else (VectorGaussianReward, {"epsilon": eps, "delta": delta, **bounds})
            try:
                wrapper[0](probe, **wrapper[1])
            except (ValueError, TypeError) as exc:
                raise UserError(f"--wrapper {args.wrapper}: {exc}") from None
            tasks.append(dict(common, wrappers=[wrapper], agents={
                f"{_label(c)} + {args.wrapper} eps={eps:g}": c for c in plain.values()}))
    for task in tasks:  # the private agents at every epsilon (and delta)
        for spec in task["agents"].values():
            if isinstance(spec, tuple):
                build(spec[0], **spec[1])
    if plain and not wrapped:
        tasks.append(dict(common, agents={_label(c): c for c in plain.values()}))

    def work(folder: Path) -> None:
        results = [ldp_gym.run(**t) for t in tasks]
        merged = results[0]
        for res in results[1:]:
            merged = merged.merge(res)
        marks = [int(t) for t in merged.checkpoints if t in {10**k for k in range(1, 10)}]
        at = sorted(set(marks[-2:] + [int(merged.checkpoints[-1])]))
        table = merged.table(at)
        print(table)
        merged.save(folder / "results.npz")
        (folder / "table.md").write_text(table + "\n")
        try:
            import matplotlib

            matplotlib.use("Agg")
            ax = merged.plot(logx=True, title=f"{args.env}, {args.runs} runs")
            ax.figure.savefig(folder / "regret.png", dpi=120, bbox_inches="tight")
        except ImportError:
            print("matplotlib not installed: no plot (pip install 'ldp-gym[plot]')",
                  file=sys.stderr)

    files = _write(args.out, args.force, work)
    print(f"wrote {args.out}/ ({', '.join(files)})")


def _label(cls: type) -> str:
    return getattr(cls, "name", cls.__name__)


def _cmd_reproduce(args: argparse.Namespace) -> None:
    from ldp_gym.experiments import EXPERIMENTS

    if args.name not in EXPERIMENTS:
        raise UserError(f"experiment {args.name!r} is unknown; choose from "
                        f"{', '.join(EXPERIMENTS)}")
    out = args.out or Path("ldp-gym-results") / args.name
    # every finished task is kept here (an interrupt must not cost hours) until out is written
    cache = out.absolute().parent / f".{out.name}.resume"
    if cache.exists() and not args.resume:
        raise UserError(f"{cache} holds the finished tasks of an earlier run; pass --resume to "
                        "skip them, or remove it to start afresh")

    def work(folder: Path) -> None:
        report = EXPERIMENTS[args.name](quick=args.quick, seed=args.seed, n_jobs=args.jobs,
                                        progress=False if args.quiet else None, cache_dir=cache)
        print(f"# {report.title}\n\n{report.table}")
        for note in report.notes:
            print(f"- {note}")
        report.write(folder)

    try:
        files = _write(out, args.force, work)
    except BaseException:
        if any(cache.glob("*.npz")):
            print(f"ldp-gym: the finished tasks are kept in {cache}/: the same command with "
                  "--resume skips them", file=sys.stderr)
        raise
    shutil.rmtree(cache, ignore_errors=True)
    print(f"wrote {out}/ ({', '.join(files)})")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``ldp-gym`` console script; returns the exit code.

    0: success; 2: a user error, one line on stderr (``ldp-gym: error: ...``),
    including the library's refusals of a parameter (ValueError, TypeError);
    130: interrupted (Ctrl-C), nothing written.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = _parser()
        if not argv:  # `ldp-gym` alone: the usage, as a usage error
            parser.print_help(sys.stderr)
            return 2
        args = parser.parse_args(argv)
        if args.command == "list":
            _cmd_list()
        elif args.command == "run":
            _cmd_run(args)
        else:
            _cmd_reproduce(args)
    except UserError as exc:
        print(f"ldp-gym: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, TypeError) as exc:  # the library's validation names the parameter
        print(f"ldp-gym: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ldp-gym: interrupted", file=sys.stderr)
        return 130
    except SystemExit as exc:  # --help, --version
        return exc.code if isinstance(exc.code, int) else 0
    except BrokenPipeError:  # the reader went away (``ldp-gym list | head``): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
