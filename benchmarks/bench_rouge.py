"""ROUGE-L on 10,000 sentence pairs: assay's rouge-l vs the rouge-score package, same process.

assay is timed per pair (``score``) and over the whole batch (``score_batch``, what the
runner uses). The headline ratio gives both sides assay's tokenizer (rouge-score is handed an
object whose ``tokenize`` calls ``assay.metrics.lexical.tokenize``), so both compute the same
numbers, checked before anything is timed; the tokenizer's time is then on both sides (assay's
``score`` takes the same tokens as UTF-8 bytes from ``token_keys``, one call for both texts,
timed on its own line below). A second
ratio gives rouge-score its own default tokenizer, so each library pays for its own: with
``--ascii`` (English-only words) both tokenizers give the same tokens and the script checks the
scores are equal; with the default Unicode vocabulary they differ and that ratio is only
indicative. Run:

    python benchmarks/bench_rouge.py [--pairs N] [--repeat R] [--words MIN MAX] [--ascii] [--cpu]
"""

from __future__ import annotations

import argparse
import random
import time

from rouge_score import rouge_scorer
from timing import race

from assay.data.dataset import Sample
from assay.data.outputs import Output
from assay.metrics.lexical import RougeL, rouge_l_counts, tokenize
from assay.metrics.tokens import token_keys, tokenize_all

VOCABULARY = [
    "the",
    "a",
    "refund",
    "window",
    "is",
    "thirty",
    "days",
    "from",
    "delivery",
    "order",
    "Paris",
    "capital",
    "of",
    "France",
    "ORD",
    "123456",
    "30",
    "policy",
    "shipping",
    "free",
    "support",
    "contact",
    "within",
    "available",
    "customer",
    "account",
    "password",
    "reset",
    "naïve",
    "café",
    "Straße",
    "Ελλάδα",
    "μήνας",
    "日本語",
    "東京",
    "Москва",
    "привет",
    "مرحبا",
    "हिन्दी",
    "Ünïcödé",
]
PUNCTUATION = ["", "", "", "", ",", ".", "!", "?", ";"]


class AssayTokenizer:
    """rouge-score accepts any object with ``tokenize``; give it assay's tokens."""

    def tokenize(self, text: str) -> list[str]:
        return tokenize(text)


def sentence(rng: random.Random, length: int) -> str:
    return " ".join(rng.choice(VOCABULARY) + rng.choice(PUNCTUATION) for _ in range(length))


def pairs(n: int, seed: int, low: int = 8, high: int = 40) -> list[tuple[str, str]]:
    """References of low..high words and candidates that are edited copies or unrelated."""
    rng = random.Random(seed)
    result = []
    for _ in range(n):
        reference = sentence(rng, rng.randint(low, high))
        if rng.random() < 0.7:
            words = [w for w in reference.split() if rng.random() > 0.2]
            for _ in range(rng.randint(0, 6)):
                words.insert(rng.randint(0, len(words)), rng.choice(VOCABULARY))
            candidate = " ".join(words)
        else:
            candidate = sentence(rng, rng.randint(low, high))
        result.append((reference, candidate))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--words", type=int, nargs=2, default=(8, 40), metavar=("MIN", "MAX"))
    parser.add_argument(
        "--ascii", action="store_true", help="English-only vocabulary (the tokenizer's fast path)"
    )
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="time CPU seconds of this process, not wall time (steadier on a busy machine)",
    )
    args = parser.parse_args()

    if args.ascii:
        VOCABULARY[:] = [word for word in VOCABULARY if word.isascii()]
    data = pairs(args.pairs, args.seed, *args.words)
    samples = [Sample(id=str(n), input={}, expected_output=ref) for n, (ref, _) in enumerate(data)]
    outputs = [Output(cand) for _, cand in data]
    metric = RougeL()
    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=AssayTokenizer())
    default_scorer = rouge_scorer.RougeScorer(["rougeL"])
    texts = [t for pair in data for t in pair]
    token_pairs = [(tokenize(r), tokenize(c)) for r, c in data]

    ours = [metric.score(s, o) for s, o in zip(samples, outputs)]
    theirs = [scorer.score(r, c)["rougeL"] for r, c in data]
    worst = max(
        max(
            abs(a.value - b.fmeasure),
            abs(a.details["precision"] - b.precision),
            abs(a.details["recall"] - b.recall),
        )
        for a, b in zip(ours, theirs)
    )
    if worst > 1e-9:
        raise SystemExit(f"results differ by {worst:g}; the timings would not be comparable")
    if metric.score_batch(samples, outputs).values.tolist() != [a.value for a in ours]:
        raise SystemExit("score_batch differs from score(); the timings would not be comparable")
    # rouge-score's own tokenizer keeps [a-z0-9] runs: the same tokens as assay's on ASCII text
    same_default = all(
        abs(a.value - default_scorer.score(r, c)["rougeL"].fmeasure) <= 1e-9
        for a, (r, c) in zip(ours, data)
    )
    if args.ascii and not same_default:
        raise SystemExit("rouge-score's default tokenizer disagrees on ASCII text; not timing")

    t = race(
        args.repeat,
        {
            "assay": lambda: [metric.score(s, o).value for s, o in zip(samples, outputs)],
            "assay-batch": lambda: metric.score_batch(samples, outputs).values.tolist(),
            "rouge-score": lambda: [scorer.score(r, c)["rougeL"].fmeasure for r, c in data],
            "rouge-score-default": lambda: [
                default_scorer.score(r, c)["rougeL"].fmeasure for r, c in data
            ],
            # where the time goes: the shared tokenizer and the two LCS + F kernels alone
            "tokenize": lambda: [len(tokenize(x)) for x in texts],
            "tokenize-all": lambda: [len(tokens) for tokens in tokenize_all(texts)],
            "token-keys": lambda: [len(token_keys(r, c)[0]) for r, c in data],
            "assay-kernel": lambda: [rouge_l_counts(r, c) for r, c in token_pairs],
            "rouge-score-kernel": lambda: [
                rouge_scorer._score_lcs(r, c).fmeasure for r, c in token_pairs
            ],
        },
        collect=False,
        clock=time.process_time if args.cpu else time.perf_counter,
    )

    n = len(data)
    tokens = sum(len(r) + len(c) for r, c in token_pairs) / n

    def line(label: str, key: str) -> str:
        return f"  {label:44s} {t[key]:8.3f} s  {t[key] / n * 1e6:8.1f} us/pair"

    print(
        f"rouge-l, {n:,} sentence pairs (mean {tokens:.1f} tokens per pair), best of "
        f"{args.repeat}, interleaved, {'CPU' if args.cpu else 'wall'} time"
    )
    print(line("assay rouge-l (metric.score)", "assay"))
    print(line("rouge-score rougeL, assay's tokenizer", "rouge-score"))
    print(
        f"  ratio (rouge-score / assay), same tokens:    {t['rouge-score'] / t['assay']:6.1f}x   "
        f"max |diff| {worst:.1e}"
    )
    print(line("assay rouge-l (score_batch, the runner's path)", "assay-batch"))
    print(
        "  ratio (rouge-score / assay score_batch):     "
        f"{t['rouge-score'] / t['assay-batch']:6.1f}x"
    )
    print("where the time goes:")
    print(line("tokenize (shared by both sides above)", "tokenize"))
    print(line("tokenize_all (score_batch's tokenizer)", "tokenize-all"))
    print(line("token_keys (score()'s tokens of both texts)", "token-keys"))
    print(line("assay LCS kernel (rapidfuzz LCSseq)", "assay-kernel"))
    print(line("rouge-score LCS table + F (pure Python)", "rouge-score-kernel"))
    print(
        "  ratio of the LCS kernels:                    "
        f"{t['rouge-score-kernel'] / t['assay-kernel']:6.1f}x"
    )
    print(line("rouge-score rougeL, its default tokenizer*", "rouge-score-default"))
    print(
        "  ratio (default rouge-score / assay):         "
        f"{t['rouge-score-default'] / t['assay']:6.1f}x"
    )
    if same_default:
        print("  * each side with its own tokenizer: the same scores on this text (checked)")
    else:
        print("  * its tokenizer keeps ASCII letters and digits only: other scores on this text")


if __name__ == "__main__":
    main()
