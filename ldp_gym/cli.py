"""The ``ldp-gym`` command line: ``list``, ``run`` and ``reproduce``.

A user error prints one line, ``ldp-gym: error: ...``, and exits with code 2.
Where it can be checked in advance, this happens before any work. Among these
checks: ``--out`` is writable, its disk has room for the results' estimated
size, and no other ldp-gym run is writing it. A worker process that dies, for
instance killed or out of memory, is one such line too. Ctrl-C prints
``ldp-gym: interrupted`` and exits with code 130. SIGTERM, which batch
schedulers send, and SIGHUP are handled the same way: they print a line such as
``ldp-gym: stopped by SIGTERM`` and exit with code 143, resp. 129. The workers
are stopped and nothing is written. Results are written into a temporary
sibling folder that is renamed to the output folder only when everything
succeeded. So nothing is ever half-written, and a failed run leaves no folder
behind. The table and the ``wrote`` line are printed only after the folder is
complete. A reader that went away, as with ``| head``, ends the command quietly
with exit code 141, as SIGPIPE would. Stdout on a full disk is one line and
exit code 2. Neither touches the results.

While it runs, a command holds a lock on its output folder: ``.<name>.lock``
beside it, removed at exit. The lock is an ``flock``, so a lock file left by a
killed run does not block the next one. A second run into the same ``--out`` is
refused at once.

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
import re
import secrets
import shutil
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, NoReturn

__all__ = ["main"]

#: the marker file of a results folder: what ldp-gym wrote there (``--force`` checks it)
MARKER = ".ldp-gym-results"


class UserError(Exception):
    """A mistake in the command line: one line on stderr, exit code 2."""


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP reached the main process; exit code 128 + the signal's number.

    It unwinds as Ctrl-C does: joblib stops the workers, and the temporary folder is removed."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class _Signals:
    """A context manager, installed in the main thread, that turns signals into exceptions.

    While it is installed, SIGTERM and SIGHUP raise :class:`Stopped` in the main process, and
    SIGINT raises ``KeyboardInterrupt``. A signal that was ignored when the process started, as
    under ``nohup``, stays ignored. While :meth:`held`, signals wait until the block ends; that
    block holds the publishing renames. After the first signal, further ones are ignored while
    the command cleans up."""

    active: _Signals | None = None

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.old: dict[int, Any] = {}
        self.holding = False
        self.pending: int | None = None
        self.stopping = False

    def __enter__(self) -> _Signals:
        for name in ("SIGINT", "SIGTERM", "SIGHUP"):
            signum = getattr(signal, name, None)
            if signum is None:
                continue
            current = signal.getsignal(signum)
            if current == signal.SIG_IGN or (name == "SIGINT"
                                             and current is not signal.default_int_handler):
                continue  # ignored on purpose (nohup, a background job), or the caller's own
            try:
                self.old[signum] = signal.signal(signum, self._handle)
            except ValueError:  # not the main thread: the signals stay as they are
                break
        _Signals.active = self
        return self

    def __exit__(self, *exc: Any) -> None:
        _Signals.active = None
        for signum, handler in self.old.items():
            signal.signal(signum, handler)

    def _handle(self, signum: int, frame: Any) -> None:
        if os.getpid() != self.pid:  # a forked child (the progress' multiprocessing manager):
            return  # the main process got it too (the group's signal) and shuts the child down
        if self.stopping:
            return
        if self.holding:
            self.pending = signum
            return
        self._stop(signum)

    def _stop(self, signum: int) -> NoReturn:
        self.stopping = True
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Stopped(signum)

    @classmethod
    @contextmanager
    def held(cls) -> Iterator[None]:
        """Signals arriving in the block take effect when it ends."""
        self = cls.active
        if self is None or self.holding:
            yield
            return
        self.holding = True
        try:
            yield
        finally:
            self.holding = False
        if self.pending is not None:
            self._stop(self.pending)


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


def _env_kwargs(text: str) -> dict[str, Any]:
    """``--env-kwargs``: a JSON object of the env's keyword arguments."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"env-kwargs must be a JSON object, got {text!r} "
                                         f"({exc.msg})") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"env-kwargs must be a JSON object, got {text!r}")
    return value


def _probability(name: str) -> Any:
    """The parser of a number in (0, 1) named ``name``."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {text!r}") from None
        if not 0.0 < value < 1.0:
            raise argparse.ArgumentTypeError(f"{name} must be in (0, 1), got {text!r}")  # nan too
        return value
    return parse


#: the rough wall-clock time of ``reproduce NAME --quick`` (measured on 2 cores, --jobs 2)
QUICK_DURATION = ("about 5 s to 2 min per experiment, mab-local-vs-global the longest (measured "
                  "on 2 cores, one of them busy)")


def _parser() -> _Parser:
    from ldp_gym import __version__
    from ldp_gym.experiments.compare import WRAPPER_DELTA

    p = _Parser(prog="ldp-gym", description="Differentially private bandits: envs, agents, "
                                            "experiments.")
    p.add_argument("--version", action="version", version=f"ldp-gym {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser,
                           metavar="{list,run,reproduce}")
    sub.add_parser("list", help="environment ids, agents and experiments")
    r = sub.add_parser("run", help="run agents on an environment")
    r.add_argument("env", help="environment id, e.g. LDPMAB-v0 (required; see list)")
    r.add_argument("--agents", required=True,
                   help="comma-separated agent names, or your own agent classes as "
                        "module:Class (required, no default; see list)")
    r.add_argument("--env-kwargs", type=_env_kwargs, default=None, metavar="JSON",
                   help="the env's keyword arguments as a JSON object, e.g. "
                        "'{\"means\": [0.9, 0.8]}' (default none)")
    r.add_argument("--epsilon", type=_epsilons, default=None,
                   help="comma-separated privacy budgets of the private agents and the wrapper "
                        "(default 1; an error when no agent or wrapper is private)")
    r.add_argument("--wrapper", choices=["none", "laplace", "gaussian"], default="none",
                   help="privatise the rewards of the non-private agents (one-point reduction; "
                        "default none)")
    r.add_argument("--delta", type=_probability("delta"), default=None,
                   help=f"delta in (0, 1) of the Gaussian wrapper (default {WRAPPER_DELTA:g}) and "
                        "of the (epsilon, delta)-DP agents (default their own, 0.01); an error "
                        "when nothing uses it")
    r.add_argument("--risk", type=_probability("risk"), default=None,
                   help="the confidence delta in (0, 1) of the best-arm identification agents "
                        "(default their own, 0.1); an error when nothing uses it")
    r.add_argument("--horizon", type=_int_at_least("horizon", 1), default=10_000,
                   help="rounds per run (default 10000; the budget in best-arm identification)")
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
    """Refuse ``--force`` on anything ldp-gym did not write entirely; see the module doc.

    A symbolic link was already refused by :func:`_check_out`, its only caller."""
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


#: what the disk check adds to the results' arrays: the table, the figure, the marker
MARGIN_BYTES = 4 * 2**20
#: the disk room ``reproduce`` asks for (an experiment's results are a few hundred kB)
REPRODUCE_BYTES = 16 * 2**20


def _megabytes(n: float) -> str:
    return f"{n / 1e6:.1f} MB"


def _check_room(out: Path, need: int) -> None:
    """Refuse before the run when the disk of ``out`` has less than ``need`` bytes free."""
    parent = out.absolute().parent
    while not parent.exists():
        parent = parent.parent
    try:
        free = shutil.disk_usage(parent).free
    except OSError:  # not knowable here: the write will tell
        return
    if free < need:
        raise UserError(f"--out {out}: {parent} has {_megabytes(free)} free, the results need "
                        f"about {_megabytes(need)}; free some space or choose another --out")


class _Lock:
    """``.<name>.lock`` beside ``out``, held with ``flock`` while a command writes ``out``: the
    kernel releases it when the process dies, so a file left behind does not block."""

    def __init__(self, out: Path):
        self.path = out.absolute().parent / f".{out.name}.lock"
        self.fd: int | None = None
        try:
            import fcntl
        except ImportError:  # not POSIX: no lock
            return
        for _ in range(10):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise UserError(f"--out {out} is being written by another ldp-gym run (it "
                                f"holds {self.path}); wait for it or choose another --out"
                                ) from None
            except OSError:  # a file system without locks: go on without
                os.close(fd)
                return
            try:  # still the file at that path (not one its last holder just removed)?
                here, mine = os.stat(self.path), os.fstat(fd)
                same = (here.st_dev, here.st_ino) == (mine.st_dev, mine.st_ino)
            except FileNotFoundError:
                same = False
            if same:
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())  # for people; the flock decides
                self.fd = fd
                return
            os.close(fd)
        raise UserError(f"--out {out}: cannot lock {self.path}")

    def release(self) -> None:
        if self.fd is not None:
            try:
                self.path.unlink()
            except OSError:
                pass
            os.close(self.fd)
            self.fd = None


class _Output:
    """The temporary sibling folder of ``out``, published by one rename, under the lock of ``out``.

    The module doc explains the rename. ``need`` is the bytes the results need, checked before."""

    def __init__(self, out: Path, force: bool, need: int = 0, about: dict | None = None):
        _check_out(out, force)
        _check_room(out, need)
        self.out, self.force, self.about = out, force, about or {}
        self.lock: _Lock | None = None
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
            self.lock = _Lock(out)
            self.tmp = self._sibling("tmp")
            self.tmp.mkdir()
        except OSError as exc:
            self.discard()
            raise UserError(f"--out {out}: {exc.strerror or exc}") from None
        except BaseException:
            self.discard()
            raise

    def _sibling(self, kind: str) -> Path:
        return self.out.absolute().parent / f".{self.out.name}.{kind}-{secrets.token_hex(4)}"

    def publish(self) -> list[str]:
        """Mark the folder, then rename it to ``out``, replacing an old one only with force.

        A signal meanwhile takes effect after the renames."""
        with _Signals.held():
            return self._publish()

    def _publish(self) -> list[str]:
        files = sorted(_entries(self.tmp))
        (self.tmp / MARKER).write_text(json.dumps(
            {"written_by": "ldp-gym", **self.about, "files": files,
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
        """Remove the temporary folder, the lock, and the parents made for them that are still empty."""
        tmp = getattr(self, "tmp", None)
        if tmp is not None and tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        if self.lock is not None:
            self.lock.release()
            self.lock = None
        for folder in reversed(self.created):
            try:
                folder.rmdir()
            except OSError:
                break
        self.created = []


#: the signals joblib's workers start with blocked (the main process handles them)
_WORKER_BLOCKED = {getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                   if hasattr(signal, name)}


def _quiet_workers() -> None:
    """Start joblib's worker processes with SIGINT, SIGTERM and SIGHUP blocked.

    Ctrl-C, and a scheduler's SIGTERM, may reach the whole process group, and a worker still
    importing would print a traceback. The main process alone handles them: one line, exit code
    130, 143 or 129. Then joblib stops the workers, with SIGKILL."""
    try:
        from joblib.externals.loky.backend import fork_exec as module
    except ImportError:  # no joblib: runs are sequential
        return
    spawn = module.fork_exec
    if getattr(spawn, "_ldp_gym", False):
        return

    def fork_exec(*args: Any, **kwargs: Any) -> Any:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, _WORKER_BLOCKED)
        try:
            return spawn(*args, **kwargs)
        finally:  # a Ctrl-C during the spawn is delivered here, in the main process
            signal.pthread_sigmask(signal.SIG_SETMASK, old)

    fork_exec._ldp_gym = True  # type: ignore[attr-defined]
    module.fork_exec = fork_exec


def _write(out: Path, force: bool, work: Callable[[Path], Any],
           need: int = 0, about: dict | None = None) -> tuple[list[str], Any]:
    """Run ``work(folder)`` into a temporary folder and publish it as ``out``, its marker
    holding ``about`` (what wrote it: the experiment of ``reproduce``).

    Nothing is left behind on any failure: errors, Ctrl-C, SIGTERM or a dead worker. Returns the
    files written and what ``work`` returned. ``need`` is the bytes the results need, checked
    before."""
    target = _Output(out, force, need, about)
    try:
        if hasattr(signal, "pthread_sigmask"):
            _quiet_workers()
        result = work(target.tmp)
        return target.publish(), result
    except OSError as exc:
        raise UserError(f"cannot write {out}: {exc}") from None
    except Exception as exc:
        from concurrent.futures import BrokenExecutor

        if not isinstance(exc, BrokenExecutor):
            raise
        codes = re.search(r"exit codes of the workers are (\{[^}]*\})", str(exc))
        raise UserError("a worker process died" + (f" (exit codes {codes.group(1)})" if codes
                                                   else "") +
                        ", killed or out of memory (fewer --jobs need less memory); nothing "
                        "written") from None
    finally:
        target.discard()


def _print(text: str | None, out: Path | None = None) -> None:
    """Print ``text`` to stdout, once the results in ``out`` are complete; None only flushes.

    A reader that went away (BrokenPipeError) ends the command quietly; :func:`main` then
    returns exit code 141. Another failure, e.g. a full disk, is one line. The results are left
    as they are."""
    try:
        if text is not None:
            sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        _stdout_failed(exc, out)


def _stdout_failed(exc: OSError, out: Path | None = None) -> NoReturn:
    _silence_stdout()
    raise UserError(f"cannot print to stdout ({exc.strerror or exc})"
                    + (f"; the results in {out}/ are complete" if out else "")) from None


def _silence_stdout() -> None:
    """Point stdout at /dev/null: what is still buffered is not written again at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


# ----------------------------------------------------------------------------------- commands
def _cmd_list() -> None:
    import ldp_gym
    from ldp_gym.agents import AGENTS
    from ldp_gym.experiments import EXPERIMENTS
    from ldp_gym.experiments.compare import is_private

    print("environments:")
    for env_id in ldp_gym.ENV_SPECS:
        print(f"  {env_id}")
    print("agents:")
    width = max(len(name) for name in AGENTS)
    setting = max(len(cls.__module__.split(".")[-1]) for cls in AGENTS.values())
    for name, cls in AGENTS.items():
        kind = f"{_trust_model(cls)} (needs --epsilon)" if is_private(cls) else "non-private"
        print(f"  {name:<{width}} {cls.__module__.split('.')[-1]:<{setting}} {kind}")
    print("experiments:")
    width = max(len(name) for name in EXPERIMENTS)
    for name, exp in EXPERIMENTS.items():
        print(f"  {name:<{width}} {exp.description}")


def _trust_model(cls: type) -> str:
    """``local DP``, ``global zCDP``, ... of a private agent class."""
    import inspect

    from ldp_gym.agents.base import trust_model

    zcdp = "rho" in inspect.signature(cls).parameters
    return f"{trust_model(cls)} {'zCDP' if zcdp else 'DP'}"


#: the command-line flag of each option of ``plan_comparison``
FLAGS = {"env": "env", "env_kwargs": "--env-kwargs", "agents": "--agents",
         "epsilons": "--epsilon", "wrapper": "--wrapper", "delta": "--delta", "risk": "--risk",
         "secure": "--secure", "horizon": "--horizon", "n_runs": "--runs", "seed": "--seed",
         "n_jobs": "--jobs"}


def _cmd_run(args: argparse.Namespace) -> None:
    from ldp_gym.experiments.compare import PlanError, plan_comparison

    names = [a.strip() for a in args.agents.split(",") if a.strip()]
    if any(":" in a for a in names) and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # your own agents, from the current folder
    try:
        plan = plan_comparison(
            args.env, names, epsilons=args.epsilon,
            wrapper=None if args.wrapper == "none" else args.wrapper, delta=args.delta,
            horizon=args.horizon, n_runs=args.runs, seed=args.seed, n_jobs=args.jobs,
            secure=args.secure, env_kwargs=args.env_kwargs,
            progress=False if args.quiet else None, risk=args.risk)
    except PlanError as exc:
        value = f" {exc.value}" if exc.value else ""
        raise UserError(f"{FLAGS[exc.option]}{value}: {exc.detail}") from None
    except ImportError as exc:  # an optional extra the env needs (scikit-learn's datasets)
        raise UserError(str(exc)) from None

    def work(folder: Path) -> tuple[str, bool]:
        merged = plan.run()
        marks = [int(t) for t in merged.checkpoints if t in {10**k for k in range(1, 10)}]
        at = sorted(set(marks[-2:] + [int(merged.checkpoints[-1])]))
        table = merged.table(at)
        merged.save(folder / "results.npz")
        (folder / "table.md").write_text(table + "\n")
        try:
            import matplotlib
        except ImportError:
            return table, False
        matplotlib.use("Agg")
        ax = merged.plot(logx=True, title=f"{args.env}, {args.runs} runs")
        ax.figure.savefig(folder / ("stopping.png" if merged.stops else "regret.png"), dpi=120,
                          bbox_inches="tight")
        import matplotlib.pyplot as plt

        plt.close(ax.figure)
        return table, True

    # the disk check: every agent's regret (float64, runs x checkpoints) and a margin
    from ldp_gym.runner import default_checkpoints

    need = plan.n_agents * args.runs * len(default_checkpoints(args.horizon)) * 8 + MARGIN_BYTES
    files, (table, plotted) = _write(args.out, args.force, work, need)
    _print(f"{table}\nwrote {args.out}/ ({', '.join(files)})", args.out)
    if not plotted:
        _note("matplotlib is not installed: no regret.png (pip install 'ldp-gym[plot]')")


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

    def work(folder: Path) -> Any:
        report = EXPERIMENTS[args.name](quick=args.quick, seed=args.seed, n_jobs=args.jobs,
                                        progress=False if args.quiet else None, cache_dir=cache)
        report.write(folder)
        return report

    try:
        files, report = _write(out, args.force, work, REPRODUCE_BYTES,
                               {"experiment": args.name, "quick": args.quick, "seed": args.seed})
    except BaseException:
        if any(cache.glob("*.npz")):
            _note(f"the finished tasks are kept in {cache}/: the same command with --resume "
                  "skips them")
        raise
    shutil.rmtree(cache, ignore_errors=True)
    _print("\n".join([f"# {report.title}\n\n{report.table}"]
                     + [f"- {note}" for note in report.notes]
                     + [f"wrote {out}/ ({', '.join(files)})"]), out)
    if not report.has_figure:
        _note("matplotlib is not installed: no figure.png (pip install 'ldp-gym[plot]')")


def _note(text: str) -> None:
    """One line on stderr. A failure to write it changes nothing."""
    try:
        print(f"ldp-gym: {text}", file=sys.stderr, flush=True)
    except (OSError, ValueError, AttributeError):
        pass


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``ldp-gym`` console script; returns the exit code.

    0: success; 2: a user error, one line on stderr (``ldp-gym: error: ...``),
    including the library's refusals of a parameter, a ValueError or TypeError;
    130: interrupted (Ctrl-C), 143 (SIGTERM) or 129 (SIGHUP): stopped, nothing written;
    141: stdout closed by its reader. The results, if any, are complete.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        with _Signals():
            parser = _parser()
            if not argv:  # `ldp-gym` alone: the usage, as a usage error
                parser.print_help(sys.stderr)
                return 2
            args = parser.parse_args(argv)
            if args.command == "list":
                try:
                    _cmd_list()
                except BrokenPipeError:
                    raise
                except OSError as exc:  # only stdout is written
                    _stdout_failed(exc)
            elif args.command == "run":
                _cmd_run(args)
            else:
                _cmd_reproduce(args)
            _print(None)  # a closed pipe or a full disk shows here, not at exit
    except Stopped as exc:
        _note(f"stopped by {signal.Signals(exc.signum).name}")
        return 128 + exc.signum
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
