"""Griffe extension of the documentation build: Sphinx-flavoured docstrings read as Markdown.

The docstrings of ldp-gym follow Gymnasium's Google style, with a few habits of Sphinx
that Markdown does not know. This extension rewrites them in memory, before griffe
parses a docstring; the source files are not touched.

* ``Example:`` (singular) section titles become ``Examples:``. Griffe's Google parser
  knows only ``Examples:`` as the section whose ``>>>`` lines are code; any other title
  becomes an admonition rendered as Markdown, where ``>>>`` reads as nested block
  quotes and ``x["key"]`` as a link.
* Sphinx roles (``:class:`~ldp_gym.agents.mab.UCB1``` and friends) become inline code
  of the name as Sphinx would show it (the last component after ``~``).
* an ``Args:`` line "The others as X." (no ``name:``) reads ``**kwargs: the others as
  X.``, which is what it means (the constructor passes ``**kwargs`` on to X); griffe
  would otherwise warn that it found no ``name: description`` pair.
* reStructuredText simple tables (rows between ``=====  ====`` borders) are fenced
  as preformatted text, so their columns stay aligned.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_TITLE = re.compile(r"^(\s*)Example:\s*$", re.MULTILINE)
_ROLE = re.compile(r":(?:py:)?(?:class|mod|func|meth|data|attr|exc|obj|const):"
                   r"`(~?)([^`<]+?)(?:\s*<([^`>]+)>)?`")
_OTHERS = re.compile(r"^(\s+)The others as ", re.MULTILINE)
_BORDER = re.compile(r"^(\s*)=+(?:\s+=+)+\s*$")


def _role(match: re.Match) -> str:
    tilde, text, target = match.group(1), match.group(2).strip(), match.group(3)
    if target:  # :class:`title <target>`
        return f"`{text}`"
    name = text.split(".")[-1] if tilde else text
    return f"`{name}`"


def _fence_rst_tables(text: str) -> str:
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        m = _BORDER.match(lines[i])
        if m:
            borders = [j for j in range(i, len(lines)) if _BORDER.match(lines[j])]
            if len(borders) >= 3:
                end = borders[2]
                indent = m.group(1)
                out += [f"{indent}```text", *lines[i:end + 1], f"{indent}```"]
                i = end + 1
                continue
        out.append(lines[i])
        i += 1
    return "\n".join(out)


class ExampleSections(griffe.Extension):
    """Rewrite every docstring's Sphinx habits into Markdown before it is parsed."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        docstring = obj.docstring
        if docstring is None:
            return
        value = docstring.value
        if "Example:" in value:
            value = _TITLE.sub(r"\1Examples:", value)
        if ":`" in value:
            value = _ROLE.sub(_role, value)
        if "The others as " in value:
            value = _OTHERS.sub(r"\1**kwargs: the others as ", value)
        if "==" in value:
            value = _fence_rst_tables(value)
        docstring.value = value
