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
  :class:`DrawsStretches` (rounds of one given action per run, per round or
  summed exactly; i.i.d. rewards given the action);
* agents declare, by class flags, how they consume a block: ``commits``
  (:class:`Commits`: learns from reward sums only), ``speculates``
  (:class:`Speculates`: runs its rule over drawn rewards of its action and
  says where it would have switched), ``plays_blocks`` (:class:`PlaysBlocks`:
  plays every round of a drawn block itself), ``plays_outcome_blocks``
  (:class:`PlaysOutcomeBlocks`: plays every round of a block of drawn outcomes,
  on a :class:`ScoresBlocks` setting); any other agent plays a drawn
  :class:`DrawsBlocks` block through ``act``/``observe``, round by round (and
  a :class:`ScoresBlocks` setting round by round);
* a wrapper is bypassed by the block path (its ``step`` is not called), so
  every wrapper layer must declare ``needs_round_by_round = False`` for blocks
  to be used. The default is ``True``: a wrapper that declares nothing (a
  third party's) may change what the agent sees (privatise rewards, count
  steps), so it is stepped round by round; the privacy wrappers declare
  ``True`` explicitly.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["BlockPlayer", "Commits", "DrawsBlocks", "DrawsStretches", "PlaysBlocks",
           "PlaysOutcomeBlocks", "ScoresBlocks", "Speculates"]


@runtime_checkable
class DrawsBlocks(Protocol):
    """A setting whose contexts and rewards do not depend on the actions."""

    def draw_block(self, rng: np.random.Generator, length: int) -> tuple[np.ndarray, ...]:
        """The next ``length`` rounds: observations (N, length + 1, ...) (the last opens the
        round after the block), every arm's rewards (N, length, K) and instantaneous regrets
        (N, length, K). The core moves past them: every run plays all of them."""


@runtime_checkable
class DrawsStretches(Protocol):
    """A setting whose rewards are i.i.d. over rounds given the action: rounds of one action per
    run can be drawn ahead, and the unplayed ones discarded unseen."""

    def draw_stretch(self, rng: np.random.Generator, actions: np.ndarray,
                     length: int) -> np.ndarray:
        """Rewards (N, length) of ``length`` rounds of ``actions``."""

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


class Commits(Protocol):
    """An agent with ``commits = True``: it plays its action for ``commitment()`` rounds and
    learns from their reward sum only."""

    def commitment(self) -> np.ndarray: ...

    def observe_committed(self, actions: np.ndarray, counts: np.ndarray,
                          reward_sums: np.ndarray, *,
                          reward_bounds: tuple[float, float] | None = None) -> None: ...


class Speculates(Protocol):
    """An agent with ``speculates = True``: runs its per-round rule over drawn rewards of its
    action and returns the rounds (N,) it used (at most ``limit``)."""

    def observe_stretch(self, actions: np.ndarray, rewards: np.ndarray,
                        limit: np.ndarray) -> np.ndarray: ...


class PlaysBlocks(Protocol):
    """An agent with ``plays_blocks = True``: plays every round of a drawn block (observations
    (N, L + 1, ...), every arm's rewards (N, L, K)) and returns its actions (N, L)."""

    def play_block(self, obs: np.ndarray, rewards: np.ndarray) -> np.ndarray: ...


class PlaysOutcomeBlocks(Protocol):
    """An agent with ``plays_outcome_blocks = True`` (on a :class:`ScoresBlocks` setting):
    plays every round of a block of drawn outcomes (N, L, m) (sees the outcomes of its super
    arm of each round only) and returns its super arms (N, L, m) int8."""

    def play_outcomes(self, outcomes: np.ndarray) -> np.ndarray: ...


class BlockPlayer(Protocol):
    """The runner's side of the block protocol, one per agent and env (``runner._block_player``)."""

    def play(self, obs: np.ndarray, limit: np.ndarray) -> tuple[np.ndarray, ...]:
        """Play the next block from observations ``obs``, at most ``limit[i]`` rounds in run i
        where the draw allows it (stretches; a block of every arm is played whole).

        Returns:
            ``(next_obs, rounds, regret)``: run i played segments of ``rounds[i, j]`` rounds
            (0 allowed) of one decision each, at a summed regret of ``regret[i, j]``.
        """
