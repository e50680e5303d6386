"""A pair on one tokenizer whose embedding tables differ in padded rows (Qwen2-72B has 152064 rows,
Qwen2-1.5B 151936): the larger model may emit or propose an id the other has no row for. Every
system decodes, in process and across processes, lossless against ar, whichever model is larger
(Transformer.accept_tokens_below); hf-assisted, which cannot, is refused with one error line."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import torch
from typer.testing import CliRunner

from swiftspec_bench.cli import app
from swiftspec_core.models import loading
from swiftspec_core.models.presets import PRESETS
from swiftspec_core.models.tiny_tokenizer import tiny_tokenizer

DATA_DIR = Path(__file__).with_name("fixtures")
SMALL, LARGE = 384, 500  # rows; the tokenizer has 263 tokens


def _folder(root: Path, rows: int, seed: int) -> str:
    """tiny-llama's shape with `rows` embedding rows, random weights, saved as a model folder; the
    rows past SMALL scaled up so that the model emits and proposes them often."""
    config = PRESETS["tiny-llama"].hf_config()
    config.vocab_size = rows
    folder = root / f"tiny-{rows}"
    hf = loading._random_model(config, torch.float32, torch.device("cpu"), seed)
    with torch.no_grad():
        hf.get_output_embeddings().weight[SMALL:] *= 30
    hf.save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    return str(folder)


def _run(out: Path, target: str, draft: str, *extra: str):
    steps = ["--draft-steps", "2"] if any("swiftspec" in arg for arg in extra) else []  # swiftspec's d alone
    return CliRunner().invoke(app, ["run", "--target", target, "--draft", draft, "--datasets", "gsm8k", "--limit", "1",
                                    "--max-new-tokens", "24", "--data-dir", str(DATA_DIR), "--out", str(out),
                                    "--device", "cpu", *steps, *extra])


def test_tables_of_different_sizes_decode_lossless(tmp_path):
    small, large = _folder(tmp_path, SMALL, 1), _folder(tmp_path, LARGE, 2)
    out = tmp_path / "large-target"
    res = _run(out, large, small, "--systems", "ar,chain,tree,swiftspec")
    assert res.exit_code == 0, (res.stdout, res.stderr, res.exception)
    res = _run(out, large, small, "--systems", "ar,tree,swiftspec", "--tp", "2", "--split", "1+1")
    assert res.exit_code == 0, (res.stdout, res.stderr, res.exception)
    frame = pd.read_parquet(out / "results.parquet")
    assert max(frame.output_tokens.iloc[0]) >= SMALL  # the target emitted an id the draft has no row for
    assert frame.output_sha.nunique() == 1 and len(frame) == 7

    out = tmp_path / "small-target"  # the draft proposes ids past the target's rows
    res = _run(out, small, large, "--systems", "ar,chain,tree,swiftspec")
    assert res.exit_code == 0, (res.stdout, res.stderr, res.exception)
    frame = pd.read_parquet(out / "results.parquet")
    assert frame.output_sha.nunique() == 1 and len(frame) == 4

    res = _run(tmp_path / "assisted", large, small, "--systems", "hf-assisted")
    assert res.exit_code == 2 and "hf-assisted needs the draft's and the target's embedding tables alike" in res.stderr
