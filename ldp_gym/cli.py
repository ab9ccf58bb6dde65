"""The ``ldp-gym`` command line: ``list``, ``run`` and ``reproduce``.

A user error prints one line (``ldp-gym: error: ...``) and exits with code 2;
results are written into a temporary folder that is renamed to the output
folder only when everything succeeded, so nothing is ever half-written.

Examples::

    ldp-gym list
    ldp-gym run LDPMAB-v0 --agents UCB1,AdaP-KLUCB --epsilon 0.5,1 --horizon 10000 --runs 10
    ldp-gym reproduce azize2022-fig2 --quick --out results/fig2
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, NoReturn

__all__ = ["main"]


class UserError(Exception):
    """A mistake in the command line: one line on stderr, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2 (argparse prints usage too)
        raise UserError(message)


def _positive_int(name: str):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {text!r}") from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"{name} must be >= 1, got {value}")
        return value
    return parse


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


def _parser() -> _Parser:
    p = _Parser(prog="ldp-gym", description="Differentially private bandits: envs, agents, "
                                            "experiments.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sub.add_parser("list", help="environment ids, agents and experiments")
    r = sub.add_parser("run", help="run agents on an environment")
    r.add_argument("env", help="environment id, e.g. LDPMAB-v0")
    r.add_argument("--agents", required=True, help="comma-separated agent names (see list)")
    r.add_argument("--epsilon", type=_epsilons, default=[1.0],
                   help="comma-separated privacy budgets for private agents (default 1)")
    r.add_argument("--wrapper", choices=["none", "laplace", "gaussian"], default="none",
                   help="privatise rewards for the non-private agents (one-point reduction)")
    r.add_argument("--delta", type=float, default=1e-5, help="delta of the Gaussian wrapper")
    r.add_argument("--horizon", type=_positive_int("horizon"), default=10_000)
    r.add_argument("--runs", type=_positive_int("runs"), default=10)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--jobs", type=int, default=1, help="parallel processes (agents)")
    r.add_argument("--out", type=Path, default=Path("ldp-gym-results/run"))
    r.add_argument("--force", action="store_true", help="replace an existing output folder")
    r.add_argument("--quiet", action="store_true", help="no progress bars")
    r.add_argument("--secure", action="store_true",
                   help="draw all privacy noise from the OS CSPRNG (deployment: the noise cannot "
                        "be replayed, so results are not reproducible; --seed then only drives "
                        "the envs and the agents' public decisions)")
    e = sub.add_parser("reproduce", help="reproduce a paper's experiment")
    e.add_argument("name", help="experiment name (see list)")
    e.add_argument("--quick", action="store_true", help="a minutes-long version")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--jobs", type=int, default=2, help="parallel processes")
    e.add_argument("--out", type=Path, default=None,
                   help="output folder (default ldp-gym-results/NAME)")
    e.add_argument("--force", action="store_true", help="replace an existing output folder")
    e.add_argument("--quiet", action="store_true", help="no progress bars")
    return p


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


def _prepare_out(out: Path, force: bool) -> Path:
    if out.exists() and not force:
        raise UserError(f"--out {out} exists; choose another folder or pass --force")
    out.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))


def _publish(tmp: Path, out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)


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
    if args.jobs == 0 or args.jobs < -1:
        raise UserError(f"--jobs must be >= 1 or -1, got {args.jobs}")
    if args.wrapper == "gaussian" and not 0 < args.delta < 1:
        raise UserError(f"--delta must be in (0, 1), got {args.delta}")
    tasks: list[dict[str, Any]] = []
    common = dict(env=args.env, horizon=args.horizon, n_runs=args.runs, seed=args.seed,
                  progress=False if args.quiet else None, n_jobs=args.jobs, secure=args.secure)
    private = {a: by_lower[a.lower()] for a in names if _is_private(by_lower[a.lower()])}
    plain = {a: by_lower[a.lower()] for a in names if a not in private}
    if args.secure and not private and args.wrapper == "none":
        raise UserError("--secure: no agent or wrapper draws privacy noise (name a private "
                        "agent or pass --wrapper)")
    try:
        probe = ldp_gym.make_vector_env(args.env, 1, args.horizon)
    except ImportError as exc:  # an optional extra the env needs (scikit-learn's datasets)
        raise UserError(str(exc)) from None
    # rewards are clipped to the bounds the setting declares (BCO: [-B, B]), else [0, 1]
    lower, upper = probe.unwrapped.core.bounded_rewards or (0.0, 1.0)
    for eps in args.epsilon:
        agents = {f"{_label(c)} eps={eps:g}": (c, {"epsilon": eps}) for c in private.values()}
        if agents:
            tasks.append(dict(common, agents=agents))
        if plain and args.wrapper != "none":
            bounds = {"lower": lower, "upper": upper}
            wrapper = (VectorLaplaceReward, {"epsilon": eps, **bounds}) \
                if args.wrapper == "laplace" \
                else (VectorGaussianReward, {"epsilon": eps, "delta": args.delta, **bounds})
            try:
                wrapper[0](probe, **wrapper[1])
            except (ValueError, TypeError) as exc:
                raise UserError(f"--wrapper {args.wrapper}: {exc}") from None
            tasks.append(dict(common, wrappers=[wrapper], agents={
                f"{_label(c)} + {args.wrapper} eps={eps:g}": c for c in plain.values()}))
    if plain and args.wrapper == "none":
        tasks.append(dict(common, agents={_label(c): c for c in plain.values()}))
    # validate every agent's parameters before any work (errors name the parameter)
    for task in tasks:
        for spec in task["agents"].values():
            cls, kw = spec if isinstance(spec, tuple) else (spec, {})
            try:
                cls.from_env(probe, secure=args.secure, **kw)
            except (ValueError, TypeError) as exc:
                raise UserError(f"{_label(cls)}: {exc}") from None
    tmp = _prepare_out(args.out, args.force)
    try:
        results = [ldp_gym.run(**t) for t in tasks]
        merged = results[0]
        for r in results[1:]:
            merged = merged.merge(r)
        marks = [int(t) for t in merged.checkpoints if t in {10**k for k in range(1, 10)}]
        at = sorted(set(marks[-2:] + [int(merged.checkpoints[-1])]))
        table = merged.table(at)
        print(table)
        merged.save(tmp / "results.npz")
        (tmp / "table.md").write_text(table + "\n")
        try:
            import matplotlib

            matplotlib.use("Agg")
            ax = merged.plot(logx=True, title=f"{args.env}, {args.runs} runs")
            ax.figure.savefig(tmp / "regret.png", dpi=120, bbox_inches="tight")
        except ImportError:
            print("matplotlib not installed: no plot (pip install 'ldp-gym[plot]')",
                  file=sys.stderr)
        _publish(tmp, args.out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"wrote {args.out}/ (results.npz, table.md, regret.png)")


def _label(cls: type) -> str:
    return getattr(cls, "name", cls.__name__)


def _cmd_reproduce(args: argparse.Namespace) -> None:
    from ldp_gym.experiments import EXPERIMENTS

    if args.name not in EXPERIMENTS:
        raise UserError(f"experiment {args.name!r} is unknown; choose from "
                        f"{', '.join(EXPERIMENTS)}")
    if args.jobs == 0 or args.jobs < -1:
        raise UserError(f"--jobs must be >= 1 or -1, got {args.jobs}")
    out = args.out or Path("ldp-gym-results") / args.name
    tmp = _prepare_out(out, args.force)
    try:
        report = EXPERIMENTS[args.name](quick=args.quick, seed=args.seed, n_jobs=args.jobs,
                                        progress=False if args.quiet else None)
        print(f"# {report.title}\n\n{report.table}")
        for note in report.notes:
            print(f"- {note}")
        report.write(tmp)
        _publish(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"wrote {out}/ (table.md, results, figure.png)")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``ldp-gym`` console script; returns the exit code."""
    try:
        args = _parser().parse_args(argv)
        if args.command == "list":
            _cmd_list()
        elif args.command == "run":
            _cmd_run(args)
        else:
            _cmd_reproduce(args)
    except UserError as exc:
        print(f"ldp-gym: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
