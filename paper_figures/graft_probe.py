"""Accepted tokens per round with and without chain grafting (issue 9), and with the draft's
vocabulary cut (--draft-vocabs), on dataset prompts:

    python3 paper_figures/graft_probe.py --target qwen2.5-coder-1.5b --draft qwen2.5-coder-0.5b \
        --datasets all --limit 2 --tokens 64 [--grafts off,ngram] [--draft-vocabs full,32768]

Runs swiftspec in lockstep at each --draft-steps d and serial tree, each with grafting off and on,
over every turn of the first --limit questions of each dataset (a later turn carries ar's answer
to the earlier one, which every lossless system shares). A draft vocabulary N makes the draft's
lm_head the first N rows of its weight (token ids 0..N-1: a BPE tokenizer numbers its tokens in
merge order, so roughly most frequent first): its proposals come from those tokens alone, at N / V
of the head's bytes; the target verifies as ever, so outputs stay ar's. Prints markdown: accepted
tokens per round per dataset and pooled; per configuration the fraction of draft steps whose best
leaf matched the request's text (a graft fired), the fraction of grafted tokens that survived the
top-k cut, and the mean wall time of one draft step; and whether every output equals ar's.
"""
from __future__ import annotations

import argparse
import time
from dataclasses import replace

import torch

from swiftspec_bench import datasets as ds
from swiftspec_bench.compare import render
from swiftspec_bench.systems import SYSTEMS, LoadedPair, run_query
from swiftspec_core.decoders.base import SpecSettings, drafter_args, reuse
from swiftspec_core.decoders.drafter import Drafter
from swiftspec_core.models.loading import load_model
from swiftspec_core.models.vocab import check_pair, eos_ids


class StepTimer:
    """Wraps a drafter's `step`, summing its wall time and count (synchronized on GPU)."""

    def __init__(self, drafter: Drafter):
        self.step, self.seconds, self.calls = drafter.step, 0.0, 0
        self.cuda = drafter.model.device.type == "cuda"
        drafter.step = self

    def __call__(self, *args):
        if self.cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = self.step(*args)
        if self.cuda:
            torch.cuda.synchronize()
        self.seconds += time.perf_counter() - t0
        self.calls += 1
        return out


def configs(draft_steps: list[int], base: SpecSettings, grafts: list[str] = ("off", "ngram"),
            vocabs: list[int | None] = (None,)) -> dict[str, tuple[str, SpecSettings, int | None]]:
    """name -> (system, settings, the draft's vocabulary: None for all of it)."""
    out = {}
    for vocab in vocabs:
        cut = f" v{vocab}" if vocab else ""
        for graft in grafts:
            tag = "+graft" if graft == "ngram" else ""
            for d in draft_steps:
                out[f"swiftspec d{d}{tag}{cut}"] = ("swiftspec", replace(base, draft_steps=d, graft=graft), vocab)
            out[f"tree{tag}{cut}"] = ("tree", replace(base, graft=graft), vocab)
    return out


class draft_vocabulary:
    """Inside it, the draft engine's lm_head is the first `rows` rows of its head weight (a view;
    None: unchanged)."""

    def __init__(self, engine, rows: int | None):
        self.engine, self.rows = engine, rows

    def __enter__(self):
        self.saved = self.engine.lm_head
        if self.rows:
            head = self.engine.embed if self.saved is None else self.saved
            self.engine.lm_head = torch.nn.Parameter(head[: self.rows], requires_grad=False)

    def __exit__(self, *exc):
        self.engine.lm_head = self.saved


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="tiny-qwen2")
    ap.add_argument("--draft", default="tiny-qwen2")
    ap.add_argument("--weights", default="real", help="real | random (tiny presets are random anyway)")
    ap.add_argument("--datasets", default="all")
    ap.add_argument("--limit", type=int, default=2, help="questions per dataset")
    ap.add_argument("--tokens", type=int, default=64, help="new tokens per turn")
    ap.add_argument("--draft-steps", default="2,3", help="swiftspec's d values, comma list")
    ap.add_argument("--grafts", default="off,ngram", help="grafting settings, comma list")
    ap.add_argument("--draft-vocabs", default="full", help="the draft's vocabulary sizes, comma list (full: all)")
    ap.add_argument("--tree-bs", type=int, default=8)
    ap.add_argument("--tree-w", type=int, default=8)
    ap.add_argument("--graft-len", type=int, default=6)
    ap.add_argument("--graft-ngram", default="3,2")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--data-dir", default=None)
    a = ap.parse_args()

    dtype = getattr(torch, a.dtype)
    how = dict(weights=a.weights, dtype=dtype, device=a.device)
    target, draft = load_model(a.target, **how), load_model(a.draft, **how)
    check_pair(target, draft)
    queries = [q for name in ds.parse_dataset_list(a.datasets)
               for q in ds.load_queries(name, ds.resolve_data_dir(a.data_dir), a.limit)]
    tokenizer, eos = target.tokenizer, (set() if target.weights == "random" else eos_ids(target))
    base = SpecSettings(tree_bs=a.tree_bs, tree_w=a.tree_w, graft_len=a.graft_len,
                        graft_ngram=tuple(int(n) for n in a.graft_ngram.split(",")))
    vocabs = [None if v == "full" else int(v) for v in a.draft_vocabs.split(",")]
    runs = configs([int(d) for d in a.draft_steps.split(",")], base, a.grafts.split(","), vocabs)

    # ar's answers: the reference every configuration must equal, and the earlier turns' answers.
    # Engines sized as the CLI sizes them: the longest prompt (later turns carry answers of at most
    # --tokens tokens each), its answer and one tree, plus the turn templates' few tokens.
    longest = max(len(ds.chat_prompt_ids(tokenizer, list(q.turns), [""] * (len(q.turns) - 1)))
                  + a.tokens * len(q.turns) for q in queries)
    pair = LoadedPair(target, draft, dtype=dtype, device=a.device,
                      max_seq_len=min(longest + a.tree_bs + 64, target.max_context))
    prompts, reference = [], {}
    for q in queries:
        answers = []
        for turn in range(1, len(q.turns) + 1):
            prompt = ds.chat_prompt_ids(tokenizer, list(q.turns[:turn]), answers)
            ref, _ = run_query("ar", pair, prompt, max_new_tokens=a.tokens, eos_ids=eos, settings=base)
            reference[len(prompts)] = ref.tokens
            prompts.append((f"{q.dataset}" + (f" t{turn}" if len(q.turns) > 1 else ""), prompt))
            answers.append(tokenizer.decode(ref.tokens, skip_special_tokens=True))

    _, draft_engine = pair.models_for(SYSTEMS["tree"])
    accepted: dict[str, dict[str, list[int]]] = {}
    lines, lossless = [], True
    for name, (system, settings, vocab) in runs.items():
        with draft_vocabulary(draft_engine, vocab):
            run_query(system, pair, prompts[0][1][:16], max_new_tokens=4, eos_ids=eos, settings=settings)  # warm-up
            drafter = reuse(draft_engine, Drafter, *drafter_args(settings, settings.tree_w, graft=True))
            timer = StepTimer(drafter)
            fired = steps = proposed = kept = 0
            for i, (label, prompt) in enumerate(prompts):
                res, _ = run_query(system, pair, prompt, max_new_tokens=a.tokens, eos_ids=eos, settings=settings)
                lossless &= res.tokens == reference[i]
                accepted.setdefault(label, {}).setdefault(name, []).extend(res.accepted)
                if drafter.grafter:
                    g = drafter.grafter
                    fired, steps, proposed, kept = fired + g.fired, steps + g.steps, proposed + g.proposed, kept + g.kept
            drafter.step = timer.step
            lines.append({"config": name, "steps": timer.calls,
                          "ms_per_step": 1e3 * timer.seconds / max(timer.calls, 1),
                          "fired": fired / steps if steps else float("nan"),
                          "survived": kept / proposed if proposed else float("nan")})
            print(f"{name}: done ({timer.calls} draft steps)", flush=True)

    import pandas as pd

    table = pd.DataFrame({label: {name: sum(v) / len(v) for name, v in by.items()} for label, by in accepted.items()}).T
    pooled = {name: [x for by in accepted.values() for x in by.get(name, [])] for name in runs}
    table.loc["pooled"] = [sum(v) / len(v) if v else float("nan") for v in (pooled[c] for c in table.columns)]
    print(f"\n## Accepted tokens per round ({a.target} / {a.draft}, {len(prompts)} prompts, {a.tokens} tokens)\n")
    print(render(table.reset_index(names="dataset"), "markdown"))
    print("\n## Grafts: fraction of draft steps that fired, of grafted tokens kept; draft step time\n")
    print(render(pd.DataFrame(lines), "markdown"))
    print(f"\nlossless (every output equals ar's): {'yes' if lossless else 'NO'}")


if __name__ == "__main__":
    main()
