"""Hostile inputs for each surface, from a seeded ``random.Random`` (reproducible by seed)."""

from __future__ import annotations

import json
import random
from typing import Any

WILD_NUMBERS = ["9" * 5000, str(2**1100), "-" + "9" * 400, "1e999", "-1e999", "NaN",
                "Infinity", "-0.0", "0.5", "1", "0", "1e-400", "0x10", "1_000"]  # fmt: skip
WILD_TEXT = ["", " ", "\x00", "\ud800", "é", "日本", "```json", "```", "'", '"', "\\", "{", "[",
             "- ", ": ", "&a", "*a", "!!python/object:os.system", "%YAML 1.1", "---",
             "\t"]  # fmt: skip
# YAML tags PyYAML's safe constructor knows (and some it does not), put before a value
YAML_TAGS = ["!!timestamp", "!!bool", "!!int", "!!float", "!!binary", "!!set", "!!omap",
             "!!pairs", "!!map", "!!seq", "!!str", "!!null", "!custom", "!!python/name:os.system",
             "!<tag:yaml.org,2002:timestamp>"]  # fmt: skip
KEYS = ["score", "reason", "refusal", "verdict", "verdicts", "relevance", "supported_by",
        "faithful", "id", "input", "expected_output", "metadata", "samples", "name", "outputs",
        "output", "retrieved", "schema_version", "turns", "query", "response", "query_id",
        "item_id", "criterion", "human", "judges", "labels", "criteria", "tags", "k"]  # fmt: skip


def leaf(rng: random.Random) -> Any:
    choice = rng.random()
    if choice < 0.2:
        return rng.choice([None, True, False, 0, 1, -1, 0.5, 2**1100, -(2**70), 1e308])
    if choice < 0.35:
        return float(rng.choice(["nan", "inf", "-inf"]))
    if choice < 0.7:
        return rng.choice(WILD_TEXT) + "".join(chr(rng.randrange(32, 0x3000)) for _ in range(3))
    return rng.choice(["appropriate", "MET", "UNMET", "yes", "s1", "abstain", "answer s1"])


def value(rng: random.Random, depth: int = 0) -> Any:
    """A JSON-like value: mostly shallow, sometimes nested hundreds of levels deep."""
    if depth == 0 and rng.random() < 0.03:
        deep: Any = leaf(rng)
        for _ in range(rng.choice([150, 1200, 30_000])):
            deep = [deep] if rng.random() < 0.5 else {"b": deep}
        return deep
    if depth > 4 or rng.random() < 0.35:
        return leaf(rng)
    if rng.random() < 0.5:
        return [value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(KEYS): value(rng, depth + 1) for _ in range(rng.randrange(5))}


def mutate(rng: random.Random, text: str) -> str:
    """Random insertions, deletions and wild numbers spliced into ``text``."""
    chars = list(text)
    for _ in range(rng.randrange(4)):
        at = rng.randrange(len(chars) + 1)
        kind = rng.random()
        if kind < 0.4 and chars:
            del chars[min(at, len(chars) - 1)]
        elif kind < 0.7:
            chars[at:at] = rng.choice(WILD_NUMBERS)
        else:
            chars[at:at] = rng.choice(WILD_TEXT)
    return "".join(chars)


def document(rng: random.Random, shape: dict[str, Any] | None = None) -> str:
    """A JSON or YAML-flow document: a plausible ``shape`` with wild parts, or noise."""
    data = dict(shape or {})
    for _ in range(rng.randrange(4)):
        data[rng.choice(KEYS)] = value(rng)
    try:
        text = json.dumps(data if rng.random() < 0.8 else value(rng), allow_nan=True)
    except (ValueError, RecursionError):
        text = "[" * 30_000 + "]" * 30_000
    if rng.random() < 0.1:
        text = rng.choice(["a: ", "- "]) + "{b: " * rng.choice([50, 5000, 50_000]) + "1"
    if rng.random() < 0.15:
        text = tagged(rng, text)
    return mutate(rng, text) if rng.random() < 0.5 else text


def tagged(rng: random.Random, text: str) -> str:
    """``text`` with YAML tags put before up to three of its values (after a ``": "``)."""
    parts = text.split(": ")
    for _ in range(min(3, len(parts) - 1)):
        at = rng.randrange(1, len(parts))
        parts[at] = f"{rng.choice(YAML_TAGS)} {parts[at]}"
    return ": ".join(parts)


def judge_reply(rng: random.Random) -> str:
    base = {"score": rng.choice([0.5, 1, 0]), "reason": "r", "refusal": "appropriate"}
    base |= {rng.choice(["score", "relevance", "verdict"]): json.loads("0")}
    text = document(rng, base)
    for number in rng.sample(WILD_NUMBERS, 2):
        text = text.replace("0.5", number, 1).replace(": 0", ": " + number, 1)
    return ("```json\n" + text + "\n```") if rng.random() < 0.2 else text


PATTERN_ATOMS = ["a", "b", ".", "\\d", "\\w", "\\s", "\\B", "[a-z]", "[^\\d]", "(a|b)", "(?:ab)",
                 "^", "$", "\\Z", "é", "\\p{L}", "\\.", "(?P<n>a)", "a{2,3}", "x*?"]  # fmt: skip
HOSTILE_ATOMS = ["(a+)+$", "(a|aa)+(?<!c)$", "(?R)", "((?(1)a|b)){1000000}", "a{1000000}",
                 "(a)\\1", "(?=a)", "a++", "[zaza", "(?m)^a$", "[[:alpha:]]", "\\", "(",
                 "a{,3}", "\\N{BOGUS}", "(?x) a # c", "(?P=n)", "\ud800"]  # fmt: skip


def regex_case(rng: random.Random) -> tuple[str, str]:
    """A delimited pattern (rarely a hostile one, which costs a worker process) and a text."""
    atoms = rng.choices(PATTERN_ATOMS, k=rng.randrange(1, 6))
    if rng.random() < 0.02:
        atoms.insert(rng.randrange(len(atoms) + 1), rng.choice(HOSTILE_ATOMS))
    quantified = [a + rng.choice(["", "", "*", "+", "?", "{1,2}"]) for a in atoms]
    flags = "".join(rng.sample("imsAD", rng.randrange(3)))
    delimiter = rng.choice(["/", "#", "~", "{", "("])
    closer = {"{": "}", "(": ")"}.get(delimiter, delimiter)
    pattern = delimiter + "".join(quantified) + closer + flags
    if rng.random() < 0.02:
        pattern = mutate(rng, pattern)
    alphabet = "ab1 \n.x" if rng.random() < 0.7 else "ab1 é\n.日x"
    text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(30)))
    if rng.random() < 0.01:
        text += "\ud800"  # a lone surrogate: RE2 cannot read it, the worker runs
    if rng.random() < 0.01:
        text = "a" * 5000 + "!"
    return pattern, text


BUNDLE_NAMES = ["manifest.json", "tez.md", "context/a.md", "context/b.txt", "../escape.md",
                "/abs.md", "context/../../up.md", "c:/win.md", "context\\back.md", "a" * 300,
                "context/", "dir/manifest.json", "\x00.md", "context/a.md"]  # fmt: skip


def manifest(rng: random.Random) -> dict[str, Any]:
    """A Tez manifest: a valid skeleton whose fields are sometimes swapped for wild values."""
    items: list[Any] = [
        {"id": "a", "type": "document", "file": "context/a.md", "mime_type": "text/markdown"},
        {"id": "b", "type": "data", "file": rng.choice(BUNDLE_NAMES)},
    ]
    shape: dict[str, Any] = {
        "tezit_version": rng.choice(["1.2", "2.0", "1", "", "1.2.3.4", 1.2]),
        "id": "fuzz",
        "synthesis": {"title": "t", "file": rng.choice(BUNDLE_NAMES)},
        "context": {"scope": "full", "item_count": 2, "items": items},
    }
    for _ in range(rng.randrange(3)):
        target = rng.choice([shape, shape["synthesis"], shape["context"], items[0]])
        if isinstance(target, dict):
            target[rng.choice([*target, *KEYS])] = value(rng, depth=1)
    return shape
