r"""Results pages from the experiments' own output: one command per page, never a table by hand.

A results page (``docs/results/NAME.md`` in the repository) has a ``## Measured`` section,
which is exactly the table that ``ldp-gym reproduce NAME`` wrote to ``OUT/table.md`` (without
its title line; an embedded figure ``NAME.png`` is the run's ``figure.png``), and then
sections written by people (``## Reading``, ``## Compared with the paper``) that compare the
numbers with the papers' claims. This module rewrites the first from an output folder and
leaves the others alone; whoever runs it rereads them against the new numbers::

    ldp-gym reproduce NAME --out OUT            # or --quick
    python -m ldp_gym.experiments.pages NAME OUT [--pages docs/results]

The page must exist and have both sections, and the folder must be what ``ldp-gym reproduce
NAME`` wrote (its marker names the experiment). On any error nothing is written (one line on
stderr, exit code 2).

Example:
    >>> from ldp_gym.experiments.pages import replace_measured
    >>> page = "# x\n\n## Measured\n\nold\n\n## Reading\n\nwords\n"
    >>> print(replace_measured(page, "# Title\n\n| a |\n|---|\n| 1 |\n"))
    # x
    <BLANKLINE>
    ## Measured
    <BLANKLINE>
    | a |
    |---|
    | 1 |
    <BLANKLINE>
    ## Reading
    <BLANKLINE>
    words
    <BLANKLINE>
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

__all__ = ["MEASURED", "measured_block", "regenerate", "replace_measured"]

MEASURED = "## Measured\n"


def _bounds(page: str) -> tuple[int, int]:
    """Where a page's Measured section's text starts and ends (at the next ``## `` heading)."""
    if page.count(MEASURED) != 1:
        raise ValueError("the page must have one '## Measured' section")
    start = page.index(MEASURED) + len(MEASURED)
    end = page.find("\n## ", start)
    if end < 0:
        raise ValueError("the page's '## Measured' section must be followed by a section "
                         "written by people ('## Reading', '## Compared with the paper')")
    return start, end + 1


def measured_block(page: str) -> str:
    """The text of a page's Measured section (up to the next ``## `` heading)."""
    start, end = _bounds(page)
    return page[start:end].strip("\n")


def replace_measured(page: str, table: str) -> str:
    """``page`` with its Measured section replaced by ``table`` (an experiment's
    ``table.md``) without the table's title line; the images at the top of the old section
    (a page's embedded figure) stay."""
    start, end = _bounds(page)
    lines = table.strip("\n").split("\n")
    if not lines[0].startswith("# "):
        raise ValueError("table.md must start with its title line ('# ...')")
    images = [line for line in measured_block(page).split("\n") if line.startswith("![")]
    body = "\n".join(lines[1:]).strip("\n")
    body = "\n".join(images) + "\n\n" + body if images else body
    return page[:start] + "\n" + body + "\n\n" + page[end:]


def regenerate(name: str, out: Path, pages: Path) -> tuple[Path, bool]:
    """Rewrite ``pages/NAME.md``'s Measured section from ``out/table.md``; returns the page and
    whether the output is the quick version.

    Raises:
        ValueError: an unknown experiment, a missing file, a page without the two sections, or
            a folder that ``ldp-gym reproduce NAME`` did not write (its marker names the
            experiment).
    """
    from ldp_gym.cli import MARKER
    from ldp_gym.experiments import EXPERIMENTS

    if name not in EXPERIMENTS:
        raise ValueError(f"name: no experiment {name!r} (see ldp-gym list)")
    page_path, table_path, marker = pages / f"{name}.md", out / "table.md", out / MARKER
    for path, what in ((page_path, "page"), (table_path, "out"), (marker, "out")):
        if not path.is_file():
            raise ValueError(f"{what}: {path} does not exist")
    try:
        about = json.loads(marker.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError):
        about = {}
    wrote = about.get("experiment") if isinstance(about, dict) else None
    if wrote != name:
        raise ValueError(f"out: {out} holds the output of {wrote or 'no experiment'}, not {name}")
    try:
        page, table = page_path.read_text(), table_path.read_text()
    except UnicodeDecodeError as err:
        raise ValueError(f"out: {table_path} or {page_path} is not UTF-8 text ({err.reason})") \
            from None
    new = replace_measured(page, table)
    figure, embedded = out / "figure.png", pages / f"{name}.png"
    embeds = f"]({name}.png)" in new
    if embeds and not figure.is_file():
        raise ValueError(f"out: {out} has no figure.png for the figure the page embeds")
    staged: list[tuple[str, Path]] = []
    try:  # written aside first, then renamed into place: the figure, then the page
        if embeds:
            staged.append(_stage(figure.read_bytes(), embedded))
        staged.append(_stage(new.encode(), page_path))
        for tmp, final in staged:
            os.replace(tmp, final)
    except OSError as err:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)
        raise ValueError(f"pages: cannot write {page_path}: {err}") from None
    return page_path, bool(about.get("quick"))


def _stage(data: bytes, final: Path) -> tuple[str, Path]:
    """``data`` written to a temporary file beside ``final``, with ``final``'s permissions
    (0644 for a new file); returns the temporary path and ``final``."""
    fd, tmp = tempfile.mkstemp(dir=final.parent, suffix=final.suffix)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, final.stat().st_mode & 0o777 if final.exists() else 0o644)
    except OSError:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp, final


def main(argv: list[str] | None = None) -> int:
    """The command line: ``python -m ldp_gym.experiments.pages NAME OUT [--pages DIR]``."""
    p = argparse.ArgumentParser(prog="python -m ldp_gym.experiments.pages",
                                description="Rewrite a results page's Measured section from an "
                                            "experiment's output folder.")
    p.add_argument("name", help="the experiment (see ldp-gym list)")
    p.add_argument("out", type=Path, help="the folder ldp-gym reproduce NAME wrote")
    p.add_argument("--pages", type=Path, default=Path("docs/results"),
                   help="the results pages' folder (default docs/results)")
    args = p.parse_args(argv)
    try:
        path, quick = regenerate(args.name, args.out, args.pages)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {path} from the {'quick' if quick else 'full'} version: check its Run line "
          "and reread its Reading against the new numbers")
    return 0


if __name__ == "__main__":  # pragma: no cover - the command line
    sys.exit(main())
