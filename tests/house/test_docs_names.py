"""What the docs name exists where they say (issue 37, item 4: a new user, docs only, found
``ep.LedgerNotFound`` missing and a ``timeout`` argument ``PrivateSession`` does not take).

1. Every error class of `expost.errors` that README.md or a page under docs/ names is exported
   by the package top level (``ep.X``), as ARCHITECTURE asks of every error a user can hit.
2. Every keyword argument the docs pass to ``PrivateSession(...)`` or one of its methods, in
   inline code or in an example, is a parameter of that callable.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import expost
import expost.errors

PUBLIC: list[str] = vars(expost)["__all__"]  # read from the stub at run time (not typed)
ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
INLINE = re.compile(r"`([^`\n]+)`")
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
KEYWORD = re.compile(r"\b([A-Za-z_]\w*)\s*=(?!=)")


def _texts() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in PAGES}


TEXTS = _texts()


# ----------------------------------------------------------------------------- error names


def error_classes() -> dict[str, type[BaseException]]:
    """The exception classes `expost.errors` defines."""
    return {
        name: value
        for name, value in vars(expost.errors).items()
        if isinstance(value, type)
        and issubclass(value, BaseException)
        and value.__module__ == expost.errors.__name__
    }


def named_errors(texts: dict[str, str], classes: dict[str, type[BaseException]]) -> set[str]:
    """The classes of ``classes`` that some text names (as a whole word)."""
    return {name for name in classes if any(re.search(rf"\b{name}\b", t) for t in texts.values())}


def test_every_error_the_docs_name_is_importable_from_expost() -> None:
    named = named_errors(TEXTS, error_classes())
    assert {"BudgetExceeded", "InvalidParameter", "LedgerError"} <= named  # the scan sees them
    missing = sorted(n for n in named if n not in PUBLIC)
    assert missing == [], f"errors the docs name but `import expost` does not export: {missing}"
    assert all(getattr(expost, n) is getattr(expost.errors, n) for n in named)


def test_the_error_scan_finds_a_planted_name() -> None:
    class PlantedMissing(expost.errors.ExpostError):
        pass

    classes = {**error_classes(), "PlantedMissing": PlantedMissing}
    texts = {"page.md": "catch `ep.PlantedMissing` here", "other.md": "PlantedMissingX"}
    assert "PlantedMissing" in named_errors(texts, classes)
    assert "PlantedMissing" not in named_errors({"other.md": "PlantedMissingX"}, classes)


# ----------------------------------------------------------------------------- keywords


def session_callables() -> dict[str, Callable[..., object]]:
    """``PrivateSession`` (its constructor) and its public methods, by name."""
    session = expost.PrivateSession
    found: dict[str, Callable[..., object]] = {"PrivateSession": session.__init__}
    for name, value in vars(session).items():
        if not name.startswith("_") and inspect.isfunction(value):
            found[name] = value
    return found


def _arguments(text: str, open_paren: int) -> str | None:
    """The text between ``text[open_paren]`` and its matching bracket, or None."""
    depth = 0
    for i in range(open_paren, len(text)):
        if text[i] in "([{":
            depth += 1
        elif text[i] in ")]}":
            depth -= 1
            if depth == 0:
                return text[open_paren + 1 : i]
    return None


def keywords(inner: str) -> list[str]:
    """The keyword names of an argument list (a regex for what ``ast`` cannot parse:
    ``exact=True / bits=…``)."""
    try:
        call = ast.parse(f"f({inner.replace('…', '...')})", mode="eval").body
    except SyntaxError:
        return KEYWORD.findall(inner)
    assert isinstance(call, ast.Call)
    return [k.arg for k in call.keywords if k.arg is not None]


def _on_another_class(text: str, start: int) -> bool:
    """Whether the call at ``start`` is an attribute of a class other than the session
    (``PrivacyLossDistribution.gaussian(...)`` is not ``session.gaussian(...)``)."""
    receiver = re.search(r"([A-Za-z_]\w*)\.$", text[:start])
    if receiver is None:
        return False
    return receiver[1][0].isupper() and receiver[1] != "PrivateSession"


def unknown_keywords(
    texts: dict[str, str], callables: dict[str, Callable[..., object]]
) -> Iterator[str]:
    """``page: name(keyword=)`` for each keyword a text passes that the callable lacks."""
    names = "|".join(sorted(callables, key=len, reverse=True))
    call = re.compile(rf"(?<![\w])({names})\(")
    for page, text in texts.items():
        for span in INLINE.findall(text) + BLOCK.findall(text):
            for match in call.finditer(span):
                if _on_another_class(span, match.start()):
                    continue
                inner = _arguments(span, match.end() - 1)
                if inner is None:
                    continue
                params = inspect.signature(callables[match.group(1)]).parameters
                for keyword in keywords(inner):
                    if keyword not in params:
                        yield f"{page}: {match.group(1)}({keyword}=)"


def test_every_keyword_the_docs_pass_to_a_session_exists() -> None:
    assert list(unknown_keywords(TEXTS, session_callables())) == []


@pytest.mark.parametrize(
    "text",
    [
        "`PrivateSession(budget, rng, timeout=5)`",  # the argument the new user was promised
        "```python\ns = ep.PrivateSession(\n    f,\n    rng=r,\n    timeout=5,\n)\n```\n",
        "`session.skellam(v, 1, times, delta=1e-6)`",
        "`PrivateSession(..., exact=True / timeout=…)`",  # not Python: the regex reads it
    ],
)
def test_the_keyword_scan_finds_a_planted_wrong_keyword(text: str) -> None:
    assert len(list(unknown_keywords({"page.md": text}, session_callables()))) == 1


def test_the_keyword_scan_passes_documented_keywords() -> None:
    text = "`PrivateSession(f, exact=True, bits=…)`, `session.skellam(v, 1, t, fixed_delta=…)`"
    assert list(unknown_keywords({"page.md": text}, session_callables())) == []


def test_a_class_method_of_the_same_name_is_not_a_session_call() -> None:
    texts = {"pld.md": "`PrivacyLossDistribution.gaussian(1.0, sampling_prob=0.1)`"}
    assert list(unknown_keywords(texts, session_callables())) == []
    texts = {"s.md": "`session.gaussian(1.0, sampling_prob=0.1)`"}  # twin: a session call
    assert list(unknown_keywords(texts, session_callables())) == ["s.md: gaussian(sampling_prob=)"]


# ----------------------------------------------------------------------------- ep.<name>

TOP_NAME = re.compile(r"(?<![\w.])(?:ep\.([A-Za-z_]\w*)|expost\.([A-Z]\w*))")


def unresolved_top_names(texts: dict[str, str]) -> list[str]:
    """``page: ep.Name`` for each top-level name a page uses (``ep.name``, ``expost.Name``;
    ``expost.lower`` is also the SQL schema's) that ``import expost`` does not have. The
    changelog is history: it names what the package had then."""
    return sorted(
        f"{page}: ep.{short or long}"
        for page, text in texts.items()
        if not page.endswith("changelog.md")
        for short, long in set(TOP_NAME.findall(text))
        if not hasattr(expost, short or long)
    )


def test_every_top_level_name_the_docs_use_is_importable_from_expost() -> None:
    assert {"PrivateSession", "RDPFilter"} <= set(PUBLIC)
    assert unresolved_top_names(TEXTS) == []


def test_the_top_name_scan_finds_a_planted_name() -> None:
    texts = {"p.md": "`ep.planted_call(1.0)`, `expost.PlantedFilter`, `expost.filters.X`"}
    assert unresolved_top_names(texts) == ["p.md: ep.PlantedFilter", "p.md: ep.planted_call"]
    assert unresolved_top_names({"p.md": "`expost.take_lock(...)`, `ep.filters`"}) == []
