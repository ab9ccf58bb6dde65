"""The block players: how the runner plays rounds by blocks, chosen by one declared table.

On the block path the setting's core draws the next rounds ahead, the agent consumes them and
says how many rounds each run used, and the env advances past and scores exactly those rounds.
Each agent declares how it consumes a block in one attribute, ``block_play``, a
:class:`~ldp_gym.protocols.BlockPlay`. An agent that declares nothing, such as a third party's,
is ``ROUNDS``. :data:`PLAYERS` maps each declaration to the setting's protocol it needs and to
its player:

=================  =====================  ==================================================
``block_play``     the setting declares   a block is
=================  =====================  ==================================================
PLAYS_EVALUATED    ``EvaluatesBlocks``    ``BLOCK`` rounds of drawn randomness in one
                                          compiled kernel, ``play_world``, whose rounds are
                                          act, the setting's round, the release, observe:
                                          FKM, ADX, Saha-Tewari, Hazan-Levy
PLAYS_OUTCOMES     ``ScoresBlocks``       every base arm's outcomes of ``BLOCK`` rounds
                                          (``play_outcomes``), scored by the env: CUCB,
                                          CUCB-LDP1/2, CUCB-DP with a compiled oracle
COMMITS            ``DrawsStretches``     the exact reward sum of the agent's arm over its
                                          commitment (``observe_committed``), only where
                                          every reward lies inside the agent's bounds:
                                          AdaP-UCB, AdaP-KLUCB, DP-SE
PLAYS_BLOCKS       ``DrawsBlocks``        contexts and every arm's rewards of ``BLOCK``
                                          rounds, all played in one compiled call
                                          (``play_block``): the classic and private MAB
                                          index agents, DP-UCB among them, and the
                                          contextual and nonparametric agents
ROUNDS             ``DrawsBlocks``        the same block played through ``act``/``observe``,
                                          with at most :data:`BLOCK_MAX_RUNS` runs
=================  =====================  ==================================================

A declaration whose setting lacks the protocol, or whose condition fails, falls back to ROUNDS'
row. COMMITS, for instance, fails on unbounded rewards. Without a player the rounds are played
one by one.

The block path bypasses the wrappers' ``step``, so it is taken only when every wrapper declares
``needs_round_by_round = False`` on its class. Undeclared means ``True``: a third party's wrapper
is stepped round by round, as are the privacy wrappers. The exception is the PLAYS_EVALUATED
row, where one wrapper may apply its release to the block itself (``releases_blocks``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import wait
from typing import Any, cast

import numpy as np
from gymnasium.vector import VectorWrapper
from numba import njit

from ..background import background, spare_core
from ..envs.base import BanditVectorEnv
from ..protocols import (
    AgentLike,
    BlockPlay,
    BlockPlayer,
    Commits,
    DrawsBlocks,
    DrawsStretches,
    EvaluatesBlocks,
    PlaysBlocks,
    PlaysEvaluatedBlocks,
    PlaysOutcomeBlocks,
    ScoresBlocks,
)
from ..validation import check_actions

__all__ = ["BLOCK", "BLOCK_MAX_RUNS", "PLAYERS", "block_player"]

#: Rounds drawn ahead at once (``draw_block``) for agents that play every round.
BLOCK = 512
#: Blocks pay where Python overhead dominates (few runs); with many runs, drawing every arm's
#: reward costs more than it saves (measured: x1.4-1.6 at 10-20 runs, x0.75-0.85 at 100-1000).
BLOCK_MAX_RUNS = 50


def block_player(agent: AgentLike, venv: Any, horizon: int) -> BlockPlayer | None:
    """The block path's player of ``agent`` on ``venv``, by :data:`PLAYERS`; ``None``: the
    rounds are played one by one."""
    declared = getattr(agent, "block_play", BlockPlay.ROUNDS)
    if not isinstance(declared, BlockPlay):
        raise TypeError(f"block_play must be a ldp_gym.protocols.BlockPlay, got {declared!r}")
    for play in dict.fromkeys((declared, BlockPlay.ROUNDS)):  # the declared row, then ROUNDS
        needs, make = PLAYERS[play]
        env, release = _block_env(venv, releases=play is BlockPlay.PLAYS_EVALUATED)
        if env is not None and isinstance(env.core, needs):
            player = make(agent, env, release, horizon)
            if player is not None:
                return player
    return None


def _block_env(venv: Any, releases: bool = False) -> tuple[BanditVectorEnv | None, Any]:
    """``(env, release)``: the native bandit env under ``venv``, or ``(None, None)``.

    The env is found if every wrapper in between lets the block path bypass its ``step``. Such
    a wrapper declares ``needs_round_by_round = False`` on its class; undeclared means ``True``.
    With ``releases``, one wrapper may instead apply its release to blocks itself: it declares
    ``releases_blocks``, and is returned as ``release``."""
    release = None
    while isinstance(venv, VectorWrapper):
        if releases and release is None and getattr(venv, "releases_blocks", False):
            release = venv
        elif getattr(type(venv), "needs_round_by_round", True):
            return None, None
        venv = venv.env
    return (venv, release) if isinstance(venv, BanditVectorEnv) else (None, None)


class _Evaluated:
    """Agents that play a whole block of an :class:`~ldp_gym.protocols.EvaluatesBlocks` setting
    in one compiled kernel, ``play_world``.

    The kernel gets the setting's randomness of ``BLOCK`` rounds, from ``draw_world``. Under a
    release, it also gets the release's noise, drawn ahead by its wrapper's mechanism
    (``block_release``). Every round is played, and scored by the setting's compiled round. The
    observation returned is that of the last round as the learner saw it: the env's, or the
    release's."""

    def __init__(self, agent: AgentLike, env: BanditVectorEnv, release: Any, horizon: int):
        self.agent = cast(PlaysEvaluatedBlocks, agent)  # its declaration
        self.env, self.release, self.horizon = env, release, horizon
        self.passes = release is None or getattr(release, "passes_observation", False)

    def play(self, obs: np.ndarray, limit: np.ndarray) -> tuple[np.ndarray, ...]:
        env = self.env
        length = int(min(BLOCK, self.horizon - env.t.max()))
        core = cast(EvaluatesBlocks, env.core)  # the table's protocol of PLAYS_EVALUATED
        world = env.drawn_ahead(core.draw_world, length)
        release = None if self.release is None else self.release.block_release(length)
        regrets, _, seen = self.agent.play_world(world, core.round_kernel(), release)
        env.last_regret = regrets[-1].copy()
        obs = env.core.observe() if self.passes else seen[:, 1:].copy()
        return obs, np.ones(regrets.shape[::-1], dtype=np.int64), np.ascontiguousarray(regrets.T)


@njit(cache=True, nogil=True)
def _chosen_regret(regrets: np.ndarray, actions: np.ndarray,
                   out: np.ndarray) -> bool:  # pragma: no cover - compiled
    """``out[n, s] = regrets[n, s, actions[n, s]]`` in one pass; False (``out`` unfinished)
    if an action is not an arm in ``[0, K)``."""
    runs, length, k_arms = regrets.shape
    for n in range(runs):
        for s in range(length):
            a = actions[n, s]
            if a < 0 or a >= k_arms:
                return False
            out[n, s] = regrets[n, s, a]
    return True


class _Committed:
    """Agents that commit: the exact reward sum of their action over their commitment."""

    def __init__(self, agent: AgentLike, env: BanditVectorEnv):
        self.agent, self.env = cast(Commits, agent), env  # its declaration

    @classmethod
    def where_bounded(cls, agent: AgentLike, env: BanditVectorEnv, release: Any,
                      horizon: int) -> _Committed | None:
        """Only where the setting declares every reward inside the agent's bounds: a sum
        cannot be clipped reward by reward."""
        bounds = env.core.bounded_rewards
        if bounds is None or not (getattr(agent, "lower", -np.inf) <= bounds[0]
                                  and bounds[1] <= getattr(agent, "upper", np.inf)):
            return None
        return cls(agent, env)

    def play(self, obs: np.ndarray, limit: np.ndarray) -> tuple[np.ndarray, ...]:
        actions = self.agent.act(obs)
        counts = np.minimum(self.agent.commitment(), limit)
        sums = self.env.draw_sums(actions, counts)
        self.agent.observe_committed(actions, counts, sums,
                                     reward_bounds=self.env.core.bounded_rewards)
        obs, regret = self.env.advance(actions, counts)
        return obs, counts[:, None], regret[:, None]


class _Drawn:
    """Agents that play every round: contexts and every arm's rewards of ``BLOCK`` rounds,
    scored round by round.

    The next block is drawn in a background thread while the agent plays this one, where a core
    is spare (:mod:`ldp_gym.background`). The draws do not depend on the actions, so the numbers
    are those of drawing in turn."""

    def __init__(self, env: BanditVectorEnv, play_block: Callable, horizon: int):
        self.env, self.play_block = env, play_block
        self.blocks = _prefetched(env.draw_block, horizon)
        #: (N, L) the arm recommended in each round of the last block, -1 in a pull (the
        #: core's ``recommendations``): in best-arm identification only; else None.
        self.recommended: np.ndarray | None = None

    @classmethod
    def compiled(cls, agent: AgentLike, env: BanditVectorEnv, release: Any, horizon: int) -> _Drawn:
        """The agent plays the block itself (``play_block``)."""
        return cls(env, cast(PlaysBlocks, agent).play_block, horizon)  # its declaration

    @classmethod
    def by_act_observe(cls, agent: AgentLike, env: BanditVectorEnv, release: Any,
                       horizon: int) -> _Drawn | None:
        """``act`` and ``observe`` over the drawn rounds, with at most :data:`BLOCK_MAX_RUNS`
        runs."""
        if env.num_envs > BLOCK_MAX_RUNS:
            return None
        return cls(env, _act_observe(agent, env.single_action_space), horizon)

    def play(self, obs: np.ndarray, limit: np.ndarray) -> tuple[np.ndarray, ...]:
        obs_block, rewards, regrets = next(self.blocks)
        actions = self.play_block(obs_block, rewards)
        regret = np.empty(rewards.shape[:2])
        if actions.shape != rewards.shape[:2] or actions.dtype.kind not in "iu" \
                or not _chosen_regret(regrets, actions, regret):
            raise ValueError(f"a block's actions must be arms in [0, {rewards.shape[2]}) of "
                             f"shape {rewards.shape[:2]}")
        if self.env.core.task != "regret":  # best-arm identification's BestArmCore
            self.recommended = cast(Any, self.env.core).recommendations(actions)
        return obs_block[:, -1], np.ones(actions.shape, dtype=np.int64), regret


class _Scored:
    """Agents that play super arms, on ``ScoresBlocks`` settings: every base arm's outcomes of
    ``BLOCK`` rounds.

    The next block is drawn in a background thread while the agent plays this one, where a core
    is spare; the outcomes do not depend on the super arms. The env scores the agent's super
    arms (N, L, m) round by round, and also gives the observation after the block."""

    def __init__(self, agent: AgentLike, env: Any, release: Any, horizon: int):
        # env: the combinatorial vector env (draw_outcomes, score_block)
        self.env, self.play_outcomes = env, cast(PlaysOutcomeBlocks, agent).play_outcomes
        self.blocks = _prefetched(env.draw_outcomes, horizon)

    def play(self, obs: np.ndarray, limit: np.ndarray) -> tuple[np.ndarray, ...]:
        outcomes = next(self.blocks)
        actions = self.play_outcomes(outcomes)
        obs, regret = self.env.score_block(actions, outcomes)  # checks the super arms
        return obs, np.ones(regret.shape, dtype=np.int64), regret


def _prefetched(draw: Callable, horizon: int) -> Iterator[Any]:
    """``draw(length)`` for the blocks of ``BLOCK`` rounds that make up ``horizon``, the last
    one shorter.

    Each block is drawn in the background thread while the previous one is used, where a core
    is spare (:func:`~ldp_gym.background.spare_core`, asked once); else when it is needed. The
    blocks are drawn in order either way."""
    lengths = [min(BLOCK, horizon - s) for s in range(0, horizon, BLOCK)]
    if not spare_core():
        for length in lengths:
            yield draw(length)
        return
    pool = background()
    pending = pool.submit(draw, lengths[0])
    try:
        for length in lengths[1:]:
            block = pending.result()
            pending = pool.submit(draw, length)
            yield block
        yield pending.result()
    finally:  # a block still drawing is waited for: the env's stream is never left in use
        wait((pending,))


def _act_observe(agent: AgentLike, space: Any) -> Callable:
    """``play_block`` of an agent that plays round by round: ``act`` and ``observe`` over the
    drawn rounds, looking up the chosen arm's reward.

    Actions are checked against ``space``, as the env's ``step`` would check them."""
    def play_block(obs: np.ndarray, rewards: np.ndarray) -> np.ndarray:
        n, length = rewards.shape[:2]
        rows = np.arange(n)
        actions = np.empty((n, length), dtype=np.int64)
        for s in range(length):
            actions[:, s] = a = check_actions(space, agent.act(obs[:, s]), n)
            agent.observe(obs[:, s], a, rewards[rows, s, a], obs[:, s + 1])
        return actions
    return play_block



#: The declared dispatch (see the module's table): ``block_play`` -> (the protocol the setting's
#: core must declare, the player's constructor ``(agent, env, release, horizon)``, which may
#: refuse with ``None``).
PLAYERS: dict[BlockPlay, tuple[type, Callable[..., BlockPlayer | None]]] = {
    BlockPlay.PLAYS_EVALUATED: (EvaluatesBlocks, _Evaluated),
    BlockPlay.PLAYS_OUTCOMES: (ScoresBlocks, _Scored),
    BlockPlay.COMMITS: (DrawsStretches, _Committed.where_bounded),
    BlockPlay.PLAYS_BLOCKS: (DrawsBlocks, _Drawn.compiled),
    BlockPlay.ROUNDS: (DrawsBlocks, _Drawn.by_act_observe),
}
