"""Every env class and every agent class documents a short runnable example.

The examples themselves run as doctests (``--doctest-modules`` in pyproject.toml);
this checks that none is missing and that the doctest collector finds each one.
"""

from __future__ import annotations

import doctest
import inspect
import re
import sys

import pytest

from ldp_gym.agents import AGENTS, adapters
from ldp_gym.envs import bco, best_arm, combinatorial, glm, mab, nonparametric
from ldp_gym.envs.base import BanditEnv, BanditVectorEnv
from ldp_gym.registration import ENV_SPECS


def _env_classes() -> list[type]:
    found = [obj for module in (mab, glm, bco, nonparametric, combinatorial, best_arm)
             for obj in vars(module).values()
             if inspect.isclass(obj) and issubclass(obj, (BanditEnv, BanditVectorEnv))
             and obj.__module__ == module.__name__]
    return sorted(set(found), key=lambda c: c.__name__)


ENV_CLASSES = _env_classes()
AGENT_CLASSES = sorted(set(AGENTS.values()) | {getattr(adapters, n) for n in adapters.__all__},
                       key=lambda c: c.__name__)


def test_every_registered_env_class_is_enumerated():
    names = {c.__name__ for c in ENV_CLASSES}
    entry_points = {ep.split(":")[1] for spec in ENV_SPECS.values() for ep in spec[:2]}
    assert entry_points <= names
    assert len(ENV_CLASSES) == 20


@pytest.mark.parametrize("cls", ENV_CLASSES + AGENT_CLASSES, ids=lambda c: c.__name__)
def test_docstring_has_a_runnable_example(cls):
    doc = cls.__doc__ or ""
    match = re.search(r"^\s*Example:\s*$", doc, re.M)
    assert match, f"{cls.__name__}'s docstring has no 'Example:' section"
    examples = doctest.DocTestParser().get_examples(doc[match.end():])
    assert examples, f"{cls.__name__}'s 'Example:' section has no '>>>' lines"
    # the doctest collector (--doctest-modules) finds it in the class's own module
    module = sys.modules[cls.__module__]
    tests = {t.name: t for t in doctest.DocTestFinder().find(module, module.__name__)}
    found = tests.get(f"{module.__name__}.{cls.__qualname__}")
    assert found is not None and found.examples, f"no doctest collected for {cls.__name__}"


def _composed_doc_classes() -> list[type]:
    """The public classes of the modules whose docstrings ruff cannot check (``__doc__ = ...``)."""
    import importlib
    import pkgutil

    import ldp_gym.envs
    names = [f"ldp_gym.envs.{m.name}" for m in pkgutil.iter_modules(ldp_gym.envs.__path__)]
    names += [f"ldp_gym.wrappers.{m}" for m in ("bco", "feedback", "reward", "semibandit")]
    found = []
    for name in names:
        module = importlib.import_module(name)
        found += [obj for key, obj in vars(module).items()
                  if inspect.isclass(obj) and obj.__module__ == name and not key.startswith("_")]
    return sorted(found, key=lambda c: f"{c.__module__}.{c.__name__}")


@pytest.mark.parametrize("cls", _composed_doc_classes(), ids=lambda c: f"{c.__module__}.{c.__name__}")
def test_public_class_has_its_own_docstring(cls):
    # pyproject.toml exempts these modules from ruff's D101, which cannot read a composed __doc__
    doc = cls.__dict__.get("__doc__") or ""
    assert len(doc.split()) >= 5, f"{cls.__name__} has no docstring of its own"
