"""Declared capabilities that let the runner play rounds by blocks.

The runner has two paths: round by round, with ``act``, the env's ``step`` and
``observe``, and by blocks. On the block path the setting's core draws the
next rounds ahead, the agent consumes them and says how many rounds it used,
and the env advances past and scores exactly those rounds. What may be drawn
ahead is declared here, never guessed:

* settings, through their cores, declare :class:`DrawsBlocks`, :class:`ScoresBlocks`
  and/or :class:`DrawsStretches`. :class:`DrawsBlocks` draws contexts and every arm's
  outcome, which do not depend on the actions. :class:`ScoresBlocks` draws every base
  arm's outcomes, which do not depend on the actions, when the action is a super arm
  whose feedback and regret the env computes after the agent played. This is the case
  of combinatorial semi-bandits. :class:`DrawsStretches` draws the reward sum of rounds
  of one given action per run exactly, for i.i.d. rewards given the action;
* agents declare how they consume a block in one attribute, ``block_play``, of type
  :class:`BlockPlay`. ``COMMITS`` is :class:`Commits`: the agent learns from reward sums
  only. ``PLAYS_BLOCKS`` is :class:`PlaysBlocks`: it plays every round of a drawn block
  itself. ``PLAYS_OUTCOMES`` is :class:`PlaysOutcomeBlocks`: it plays every round of a
  block of drawn outcomes, on a :class:`ScoresBlocks` setting. ``PLAYS_EVALUATED`` is
  described below. Any other agent has ``ROUNDS``, the default. It plays a drawn
  :class:`DrawsBlocks` block through ``act``/``observe``, round by round, and
  a :class:`ScoresBlocks` setting round by round. The runner's table,
  :data:`ldp_gym.runner.blocks.PLAYERS`, maps each declaration to its player;
* the block path bypasses a wrapper: its ``step`` is not called. So
  every wrapper layer must declare ``needs_round_by_round = False`` for blocks
  to be used. The default is ``True``. A wrapper that declares nothing, such as a
  third party's, may change what the agent sees: it may privatise rewards or count
  steps. So it is stepped round by round. The privacy wrappers declare
  ``True`` explicitly.

Evaluated blocks serve bandit convex optimisation. A setting that declares
:class:`EvaluatesBlocks` draws a block's randomness ahead and hands over its
compiled round, a :class:`RoundKernel`. An agent with ``PLAYS_EVALUATED``,
a :class:`PlaysEvaluatedBlocks`, plays the block in one compiled kernel. A
privacy wrapper with ``releases_blocks``, a :class:`ReleasesBlocks`, hands over
its compiled release and the noise its mechanism drew ahead, as a
:class:`ReleaseKernel`. It is the one wrapper such a block may bypass
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
    """What the runner needs of an agent.

    These are the Gymnasium loop's two calls on batches of the vector env's runs. Every
    :class:`~ldp_gym.agents.Agent` is one, and so is any third-party learner with these two
    methods. ``block_play``, when present, says which block path it also plays; see
    :class:`BlockPlay`.
    """

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
    """How an agent consumes the runner's block path: its one declaration, ``block_play``.

    The runner's table :data:`ldp_gym.runner.blocks.PLAYERS` says what each one gets.
    """

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
        """The next ``length`` rounds.

        Returns observations (N, length + 1, ...), every arm's rewards (N, length, K) and
        instantaneous regrets (N, length, K). The last observation opens the round after the
        block. The core moves past them: every run plays all of them.
        """


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
    """A setting whose base arms' outcomes do not depend on the actions, but whose feedback does.

    Its feedback and regret depend on the action, which is a super arm, as in combinatorial
    semi-bandits. Its methods have other names than :class:`DrawsBlocks`', whose rewards and
    regrets are looked up per single arm. So a setting declares one or the other.
    """

    def draw_outcomes(self, rng: np.random.Generator, length: int) -> np.ndarray:
        """Every base arm's outcomes (N, length, m) of the next ``length`` rounds, as the
        feedback shows them. The core moves past them: every run plays all of them."""

    def score_block(self, actions: np.ndarray,
                    outcomes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Score the super arms ``actions`` (N, length, m) played on ``outcomes``.

        Returns ``(observations, regret)``: the observations (N, ...) of the round after the
        block and the regret (N, length). The observation is the per-round env's, the feedback
        of the last round.
        """


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
    """An agent with ``block_play = PLAYS_BLOCKS``: it plays every round of a drawn block.

    It gets observations (N, L + 1, ...) and every arm's rewards (N, L, K), and returns its
    actions (N, L).
    """

    def play_block(self, obs: np.ndarray, rewards: np.ndarray) -> np.ndarray:
        """Play every round of the block; return the actions (N, L)."""


class PlaysOutcomeBlocks(Protocol):
    """An agent with ``block_play = PLAYS_OUTCOMES``, on a :class:`ScoresBlocks` setting.

    It plays every round of a block of drawn outcomes (N, L, m) and returns its super arms
    (N, L, m) int8. It sees only the outcomes of its super arm of each round.
    """

    def play_outcomes(self, outcomes: np.ndarray) -> np.ndarray:
        """Play every round of the block of outcomes; return the super arms (N, L, m)."""


class BlockPlayer(Protocol):
    """The runner's side of the block protocol, one per agent and env.

    :func:`ldp_gym.runner.blocks.block_player` builds it.
    """

    def play(self, obs: np.ndarray, limit: np.ndarray) -> tuple[np.ndarray, ...]:
        """Play the next block from observations ``obs``.

        Run i plays at most ``limit[i]`` rounds where the draw allows it, as stretches do. A
        block of every arm is played whole.

        Returns:
            ``(next_obs, rounds, regret)``: run i played segments of ``rounds[i, j]`` rounds
            of one decision each, at a summed regret of ``regret[i, j]``. 0 rounds are
            allowed.
        """


# --------------------------------------------------------------------------- evaluated blocks
# Settings whose round randomness does not depend on the actions but whose losses do, and are
# cheap to compute (bandit convex optimisation): the randomness of a block is drawn ahead and
# the agent plays the block in one compiled kernel that calls the setting's compiled round
# (and a release's compiled transform) every round.


class RoundKernel(NamedTuple):
    """A setting's compiled round, for an agent's block kernel on :class:`EvaluatesBlocks`.

    ``play(x, randomness_row, *args) -> bool`` plays one round of the points x (N, width)
    on the setting's state in ``args``, with row s of ``draw_world``. x is a copy the round
    may change: it projects the points as the env's ``step`` does. The state is moved on in
    place. ``play`` returns False, and plays nothing, for an action the env's ``step``
    refuses, such as NaN or inf. It writes ``rewards`` (N,), ``losses`` (N, k), ``regret``
    (N,) and ``projected`` (N,), the ``info`` flags. What the learner sees without a release
    is ``feedback``, a :class:`ReleaseKernel` function. ``seen[:, 0]`` is the reward and
    ``seen[:, 1:]`` the observation.
    """

    play: Any
    args: tuple
    feedback: Any
    rewards: np.ndarray
    losses: np.ndarray
    regret: np.ndarray
    projected: np.ndarray


class ReleaseKernel(NamedTuple):
    """A privacy release on the block path, for :class:`ReleasesBlocks`.

    ``feedback(x, losses, rewards, noise_row, params, seen, mech_row)`` is the compiled
    release of one round. It maps the env's outputs to what the learner sees, ``seen``
    (N, 1 + k): the reward, then the observation. It uses ``noise[s]``, where the noise
    (length, N) was drawn ahead by the wrapper's mechanism in the order per-round releases
    draw it. It writes the mechanism's outputs to ``mech_row``. ``record(mech)``, with mech
    (length, N), then traces the block's releases for the audits through
    :func:`~ldp_gym.wrappers.mechanisms.recording`.
    """

    feedback: Any
    params: np.ndarray
    noise: np.ndarray
    record: Any


@runtime_checkable
class EvaluatesBlocks(Protocol):
    """A setting whose per-round randomness does not depend on the actions, with compiled losses.

    A block's randomness is drawn ahead, and the agent's kernel plays its rounds with the
    setting's compiled round, a :class:`RoundKernel`.
    """

    def draw_world(self, rng: np.random.Generator, length: int) -> np.ndarray:
        """The randomness of the next ``length`` rounds (length, N, ...).

        Row s is what ``step`` draws in round s.
        """

    def round_kernel(self) -> RoundKernel:
        """The compiled round and its state, which is the core's own arrays."""


class ReleasesBlocks(Protocol):
    """A privacy wrapper whose release the block path of :class:`EvaluatesBlocks` settings applies itself.

    It declares ``releases_blocks = True``. Its ``step`` is bypassed. Its mechanism draws
    its noise ahead, and the compiled ``feedback`` of :class:`ReleaseKernel` adds it. So the
    released values are those of its per-round ``step``. Such a wrapper keeps
    ``needs_round_by_round = True``: other block paths must not bypass it.
    """

    def block_release(self, length: int) -> ReleaseKernel:
        """The compiled release of the next ``length`` rounds, its noise drawn ahead."""


class PlaysEvaluatedBlocks(Protocol):
    """An agent with ``block_play = PLAYS_EVALUATED``: it plays blocks in one compiled kernel.

    It plays ``length`` rounds of a :class:`EvaluatesBlocks` setting. Each round runs act,
    the setting's round, the release if any, and observe. It returns the regrets (length, N)
    and ``projected`` flags (length, N). The third array is what the learner saw of the last
    round (N, 1 + k). For an action the env refuses, it raises the error the round-by-round
    path would.
    """

    def play_world(self, world: np.ndarray, round_kernel: RoundKernel,
                   release: ReleaseKernel | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Play ``world``'s rounds in one compiled kernel; return regrets, flags and the last view."""
