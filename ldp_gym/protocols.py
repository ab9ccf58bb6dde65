"""Declared capabilities that let the runner play rounds by blocks.

The runner has two paths: round by round (``act``, the env's ``step``,
``observe``), and by blocks. On the block path the setting's core draws the
next rounds ahead, the agent consumes them and says how many rounds it used,
and the env advances past and scores exactly those rounds. What may be drawn
ahead is declared here, never guessed:

* settings (their cores) declare :class:`DrawsBlocks` (contexts and every
  arm's outcome, which do not depend on the actions), :class:`ScoresBlocks`
  (every base arm's outcomes, which do not depend on the actions, when the
  action is a super arm whose feedback and regret the env computes after the
  agent played: combinatorial semi-bandits) and/or
  :class:`DrawsStretches` (the reward sum of rounds of one given action per
  run, drawn exactly; i.i.d. rewards given the action);
* agents declare, in one attribute ``block_play`` (:class:`BlockPlay`), how
  they consume a block: ``COMMITS`` (:class:`Commits`: learns from reward sums
  only), ``PLAYS_BLOCKS``
  (:class:`PlaysBlocks`: plays every round of a drawn block itself),
  ``PLAYS_OUTCOMES`` (:class:`PlaysOutcomeBlocks`: plays every round of a block
  of drawn outcomes, on a :class:`ScoresBlocks` setting), ``PLAYS_EVALUATED``
  (below); any other agent (``ROUNDS``, the default) plays a drawn
  :class:`DrawsBlocks` block through ``act``/``observe``, round by round (and
  a :class:`ScoresBlocks` setting round by round). The runner's table
  (:data:`ldp_gym.runner.blocks.PLAYERS`) maps each declaration to its player;
* a wrapper is bypassed by the block path (its ``step`` is not called), so
  every wrapper layer must declare ``needs_round_by_round = False`` for blocks
  to be used. The default is ``True``: a wrapper that declares nothing (a
  third party's) may change what the agent sees (privatise rewards, count
  steps), so it is stepped round by round; the privacy wrappers declare
  ``True`` explicitly.

Evaluated blocks (bandit convex optimisation): a setting that declares
:class:`EvaluatesBlocks` draws a block's randomness ahead and hands over its
compiled round (:class:`RoundKernel`); an agent with ``PLAYS_EVALUATED``
(:class:`PlaysEvaluatedBlocks`) plays the block in one compiled kernel; a
privacy wrapper with ``releases_blocks`` (:class:`ReleasesBlocks`) hands over
its compiled release and the noise its mechanism drew ahead
(:class:`ReleaseKernel`), and is the one wrapper such a block may bypass
without ``needs_round_by_round = False``.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

__all__ = ["AgentLike", "AgentSpec", "BlockPlay", "BlockPlayer", "Commits", "DrawsBlocks",
           "DrawsStretches", "PlaysBlocks", "PlaysOutcomeBlocks", "ScoresBlocks"]
__all__ += ["EvaluatesBlocks", "PlaysEvaluatedBlocks", "ReleaseKernel", "ReleasesBlocks",
            "RoundKernel"]


@runtime_checkable
class AgentLike(Protocol):
    """What the runner needs of an agent: the Gymnasium loop's two calls on batches of the
    vector env's runs. Every :class:`~ldp_gym.agents.Agent` is one, and so is any
    third-party learner with these two methods (``block_play``, when present, says which
    block path it also plays: :class:`BlockPlay`)."""

    def act(self, obs: Any) -> Any:
        """The actions for a batch of observations (N, ...)."""
        ...

    def observe(self, obs: Any, action: Any, reward: Any, next_obs: Any) -> None:
        """Learn from a batch of rounds."""
        ...


#: What ``ldp_gym.run`` accepts for an agent: an agent class (built by its ``from_env``), a
#: ``(class, kwargs)`` pair, a callable ``env -> agent``, or a ready agent (:class:`AgentLike`).
AgentSpec = Any


class BlockPlay(Enum):
    """How an agent consumes the runner's block path: its one declaration, ``block_play``
    (the runner's table :data:`ldp_gym.runner.blocks.PLAYERS` says what each one gets)."""

    #: ``act``/``observe`` only (the default): a :class:`DrawsBlocks` block is played through
    #: them (with few runs), any other setting round by round.
    ROUNDS = "rounds"
    #: :class:`Commits`: plays its action for ``commitment()`` rounds, learns from sums only.
    COMMITS = "commits"
    #: :class:`PlaysBlocks`: plays every round of a drawn block itself (``play_block``).
    PLAYS_BLOCKS = "plays_blocks"
    #: :class:`PlaysOutcomeBlocks`: plays every round of drawn base-arm outcomes.
    PLAYS_OUTCOMES = "plays_outcomes"
    #: :class:`PlaysEvaluatedBlocks`: plays an :class:`EvaluatesBlocks` block in one kernel.
    PLAYS_EVALUATED = "plays_evaluated"


@runtime_checkable
class DrawsBlocks(Protocol):
    """A setting whose contexts and rewards do not depend on the actions."""

    def draw_block(self, rng: np.random.Generator, length: int) -> tuple[np.ndarray, ...]:
        """The next ``length`` rounds: observations (N, length + 1, ...) (the last opens the
        round after the block), every arm's rewards (N, length, K) and instantaneous regrets
        (N, length, K). The core moves past them: every run plays all of them."""


@runtime_checkable
class DrawsStretches(Protocol):
    """A setting whose rewards are i.i.d. over rounds given the action: the reward sum of
    rounds of one action per run can be drawn ahead, exactly."""

    def draw_sums(self, rng: np.random.Generator, actions: np.ndarray,
                  counts: np.ndarray) -> np.ndarray:
        """Sums (N,) of the rewards of ``counts[i]`` rounds of ``actions[i]``, drawn exactly."""

    def stretch_regret(self, actions: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Summed regret (N,) of ``counts[i]`` rounds of ``actions[i]``."""


@runtime_checkable
class ScoresBlocks(Protocol):
    """A setting whose every base arm's outcomes do not depend on the actions, but whose
    feedback and regret do (the action is a super arm: combinatorial semi-bandits). Its
    methods have other names than :class:`DrawsBlocks`' (whose rewards and regrets are looked
    up per single arm), so a setting declares one or the other."""

    def draw_outcomes(self, rng: np.random.Generator, length: int) -> np.ndarray:
        """Every base arm's outcomes (N, length, m) of the next ``length`` rounds, as the
        feedback shows them. The core moves past them: every run plays all of them."""

    def score_block(self, actions: np.ndarray,
                    outcomes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(observations (N, ...) of the round after the block, regret (N, length))`` of the
        super arms ``actions`` (N, length, m) played on ``outcomes``; the observation is the
        per-round env's (the feedback of the last round)."""


class Commits(AgentLike, Protocol):
    """An agent with ``block_play = COMMITS``: it plays its action for ``commitment()`` rounds and
    learns from their reward sum only."""

    def commitment(self) -> np.ndarray:
        """How many rounds (N,) each run commits its next action for."""

    def observe_committed(self, actions: np.ndarray, counts: np.ndarray,
                          reward_sums: np.ndarray, *,
                          reward_bounds: tuple[float, float] | None = None) -> None:
        """Learn from ``counts`` plays of ``actions`` that earned ``reward_sums`` (N,)."""


class PlaysBlocks(Protocol):
    """An agent with ``block_play = PLAYS_BLOCKS``: plays every round of a drawn block (observations
    (N, L + 1, ...), every arm's rewards (N, L, K)) and returns its actions (N, L)."""

    def play_block(self, obs: np.ndarray, rewards: np.ndarray) -> np.ndarray:
        """Play every round of the block; return the actions (N, L)."""


class PlaysOutcomeBlocks(Protocol):
    """An agent with ``block_play = PLAYS_OUTCOMES`` (on a :class:`ScoresBlocks` setting):
    plays every round of a block of drawn outcomes (N, L, m) (sees the outcomes of its super
    arm of each round only) and returns its super arms (N, L, m) int8."""

    def play_outcomes(self, outcomes: np.ndarray) -> np.ndarray:
        """Play every round of the block of outcomes; return the super arms (N, L, m)."""


class BlockPlayer(Protocol):
    """The runner's side of the block protocol, one per agent and env
    (:func:`ldp_gym.runner.blocks.block_player`)."""

    def play(self, obs: np.ndarray, limit: np.ndarray) -> tuple[np.ndarray, ...]:
        """Play the next block from observations ``obs``, at most ``limit[i]`` rounds in run i
        where the draw allows it (stretches; a block of every arm is played whole).

        Returns:
            ``(next_obs, rounds, regret)``: run i played segments of ``rounds[i, j]`` rounds
            (0 allowed) of one decision each, at a summed regret of ``regret[i, j]``.
        """


# --------------------------------------------------------------------------- evaluated blocks
# Settings whose round randomness does not depend on the actions but whose losses do, and are
# cheap to compute (bandit convex optimisation): the randomness of a block is drawn ahead and
# the agent plays the block in one compiled kernel that calls the setting's compiled round
# (and a release's compiled transform) every round.


class RoundKernel(NamedTuple):
    """A setting's compiled round, for an agent's block kernel (:class:`EvaluatesBlocks`).

    ``play(x, randomness_row, *args) -> bool`` plays one round of the points x (N, width) (a
    copy the round may change: it projects them as the env's ``step`` does) on the setting's
    state in ``args`` (moved on in place), with row s of ``draw_world``; False (nothing
    played) for an action the env's ``step`` refuses (NaN or inf). It writes ``rewards`` (N,),
    ``losses`` (N, k), ``regret`` (N,) and ``projected`` (N,) (the ``info`` flags). What the
    learner sees without a release is ``feedback`` (a :class:`ReleaseKernel` function,
    ``seen[:, 0]`` the reward and ``seen[:, 1:]`` the observation).
    """

    play: Any
    args: tuple
    feedback: Any
    rewards: np.ndarray
    losses: np.ndarray
    regret: np.ndarray
    projected: np.ndarray


class ReleaseKernel(NamedTuple):
    """A privacy release on the block path (:class:`ReleasesBlocks`).

    ``feedback(x, losses, rewards, noise_row, params, seen, mech_row)`` is the compiled
    release of one round (the env's outputs to what the learner sees, ``seen`` (N, 1 + k):
    the reward, then the observation), using ``noise[s]`` (noise (length, N) drawn ahead by
    the wrapper's mechanism, in the order per-round releases draw it) and writing the
    mechanism's outputs to ``mech_row``; ``record(mech)`` (mech (length, N)) then traces the
    block's releases for the audits (:func:`~ldp_gym.wrappers.mechanisms.recording`).
    """

    feedback: Any
    params: np.ndarray
    noise: np.ndarray
    record: Any


@runtime_checkable
class EvaluatesBlocks(Protocol):
    """A setting whose per-round randomness does not depend on the actions, with compiled
    losses: a block's randomness is drawn ahead, and the agent's kernel plays its rounds with
    the setting's compiled round (:class:`RoundKernel`)."""

    def draw_world(self, rng: np.random.Generator, length: int) -> np.ndarray:
        """The randomness of the next ``length`` rounds (length, N, ...), row s what ``step``
        draws in round s."""

    def round_kernel(self) -> RoundKernel:
        """The compiled round and its state (the core's own arrays)."""


class ReleasesBlocks(Protocol):
    """A privacy wrapper whose release the block path of :class:`EvaluatesBlocks` settings
    applies itself (``releases_blocks = True``): its ``step`` is bypassed, its noise drawn by
    its mechanism ahead and added by the compiled ``feedback`` of :class:`ReleaseKernel`, so
    that the released values are those of its per-round ``step``. Such a wrapper keeps
    ``needs_round_by_round = True``: other block paths must not bypass it."""

    def block_release(self, length: int) -> ReleaseKernel:
        """The compiled release of the next ``length`` rounds, its noise drawn ahead."""


class PlaysEvaluatedBlocks(Protocol):
    """An agent with ``block_play = PLAYS_EVALUATED``: plays ``length`` rounds of a
    :class:`EvaluatesBlocks` setting in one compiled kernel (act, the setting's round, the
    release if any, observe) and returns the regrets (length, N) and ``projected`` flags
    (length, N), or raises the error the round-by-round path would (an action the env
    refuses); the third array is what the learner saw of the last round (N, 1 + k)."""

    def play_world(self, world: np.ndarray, round_kernel: RoundKernel,
                   release: ReleaseKernel | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Play ``world``'s rounds in one compiled kernel; return regrets, flags and the last view."""
