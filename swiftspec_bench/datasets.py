"""The evaluation sets: the six named ones (datasets.yaml says where their prompts come from), jsonl
files of the user's own in the same question format, and how a query's prompt is built (the target
tokenizer's chat template, with the system's own earlier answers)."""
from __future__ import annotations

import itertools
import json
import math
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from swiftspec_core.errors import UserError

from .names import parse_names

PACKAGE_CHECKOUT = Path(__file__).resolve().parent.parent
# The checkout's top-level datasets.yaml (editable installs); a wheel carries it in the package.
_YAML = next((p for p in (PACKAGE_CHECKOUT / "datasets.yaml", Path(__file__).with_name("datasets.yaml"))
              if p.is_file()), PACKAGE_CHECKOUT / "datasets.yaml")
# Where the local copies are looked for when --data-dir is not given, first match wins.
DATA_DIR_CANDIDATES = (Path("..") / "shared" / "datasets" / "eagle",
                       PACKAGE_CHECKOUT.parent / "shared" / "datasets" / "eagle")


@dataclass(frozen=True)
class Query:
    dataset: str
    question_id: str
    category: str
    turns: tuple[str, ...]  # the user's messages, in order


@lru_cache(maxsize=1)
def dataset_specs() -> dict[str, dict]:
    with open(_YAML, encoding="utf-8") as f:
        return yaml.safe_load(f)["datasets"]


def dataset_names() -> list[str]:
    return list(dataset_specs())


@dataclass(frozen=True)
class Dataset:
    name: str  # what rows say: a named set's name, or a user file's stem
    file: Path | None = None  # a user's jsonl; None for a named set (under --data-dir, else the hub)


def is_user_file(entry: str) -> bool:
    return entry.endswith(".jsonl") or "/" in entry


def parse_dataset_list(text: str) -> list[Dataset]:
    """`all`, or a comma list of dataset names and paths of jsonl files in the question format,
    in the order given, without repeats; two datasets may not share a name."""
    known = dataset_names()
    if text.strip() == "all":
        return [Dataset(n) for n in known]
    files = [e.strip() for e in text.split(",") if is_user_file(e.strip())]
    out = []
    for entry in parse_names(text, "--datasets", "dataset", _Known(known, files),
                             also=", all, or a path to a .jsonl file"):
        if entry not in files:
            out.append(Dataset(entry))
            continue
        path = Path(entry).expanduser()
        if path.is_dir():
            raise UserError(f"--datasets {entry}: is a folder, not a .jsonl file")
        if not path.is_file():
            raise UserError(f"--datasets {entry}: no such file")
        out.append(Dataset(path.stem, path))
    names = [d.name for d in out]
    for name in names:
        if names.count(name) > 1:
            raise UserError(f"--datasets: two datasets are named {name!r} (a file's rows are named by its stem)")
    return out


class _Known(list):
    """The named datasets (listed in errors), and the user's files (accepted as given)."""

    def __init__(self, names: list[str], files: list[str]):
        super().__init__(names)
        self.files = set(files)

    def __contains__(self, entry) -> bool:
        return entry in self.files or super().__contains__(entry)


def resolve_data_dir(option: str | None) -> Path | None:
    """The folder of local jsonl copies: --data-dir if given (it must exist), else the first
    candidate that exists, else None (prompts then come from the hub)."""
    if option:
        path = Path(option).expanduser()
        if not path.is_dir():
            raise UserError(f"--data-dir {option}: no such folder")
        return path
    for candidate in DATA_DIR_CANDIDATES:
        if candidate.is_dir():
            return candidate
    return None


def load_queries(dataset: Dataset, data_dir: Path | None, limit: int) -> list[Query]:
    """The first `limit` questions of a dataset: a user's file, the local copy, or else the hub.
    None at all is a user error (an empty file would otherwise silently drop out of the run)."""
    if dataset.file is not None:
        return read_jsonl(dataset.name, dataset.file, limit)
    spec = dataset_specs()[dataset.name]
    if data_dir is None:
        queries = load_from_hub(dataset.name, spec, limit)
    else:
        path = data_dir / spec["file"]
        if not path.is_file():
            raise UserError(f"dataset {dataset.name}: {path} does not exist")
        queries = read_jsonl(dataset.name, path, limit)
    if not queries:
        raise UserError(f"dataset {dataset.name}: the hub returned no questions")
    return queries


def read_jsonl(name: str, path: Path, limit: int) -> list[Query]:
    """The first `limit` questions of a file in the question format (see datasets.yaml); an empty
    file, a malformed line, bytes that are not UTF-8 or a question_id met twice is a user error,
    past `limit` too (a later run with a larger --limit would meet it only after hours of rows)."""
    queries, ids = [], set()
    try:
        f = open(path, "rb")  # bytes: a line that is not UTF-8 is named by its number
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror or type(exc).__name__})") from None
    with f:
        for lineno, raw in enumerate(f, start=1):
            try:  # a byte-order mark (Windows editors write one) is not part of the first question
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError:
                raise UserError(f"{path}:{lineno}: not UTF-8 text") from None
            if not line.strip():
                continue
            query = _parse_question(name, line, f"{path}:{lineno}")
            if query.question_id in ids:
                raise UserError(f"{path}:{lineno}: question_id {query.question_id} appears twice")
            ids.add(query.question_id)
            if len(queries) < limit:
                queries.append(query)
    if not queries:
        raise UserError(f"{path} holds no questions")
    return queries


def _parse_question(name: str, line: str, where: str) -> Query:
    """One line of a question file; `where` (FILE:LINE) heads the error of a malformed one."""
    try:
        row = json.loads(line)
        if not isinstance(row, dict):
            raise ValueError(f"want a JSON object, got a JSON {_json_kind(row)}")
        turns, qid = row["turns"], row["question_id"]
        if not isinstance(turns, list) or not turns or not all(isinstance(t, str) for t in turns):
            raise ValueError("`turns` must be a non-empty list of strings")
        # null, true, [1, 2] or NaN would name rows "None", "True", "[1, 2]", "nan"
        if isinstance(qid, bool) or not isinstance(qid, (str, int, float)) or qid == "" or \
                (isinstance(qid, float) and not math.isfinite(qid)):
            raise ValueError(f"`question_id` must be a number or a non-empty string, not {json.dumps(qid)}")
        # JSON's \ud800 escapes decode to lone surrogates, which no UTF-8 tokenizer or results file takes
        json.dumps(row, ensure_ascii=False).encode("utf-8")
        return Query(name, str(qid), str(row.get("category") or ""), tuple(turns))
    except (ValueError, KeyError, TypeError) as exc:
        what = (f"missing field {exc}" if isinstance(exc, KeyError) else
                "a \\ud800-\\udfff escape that is half a character, not text" if isinstance(exc, UnicodeEncodeError)
                else str(exc).splitlines()[0])
        raise UserError(f"{where}: malformed line ({what})") from None


def _json_kind(value) -> str:
    return {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")


def load_from_hub(name: str, spec: dict, limit: int) -> list[Query]:
    """The same prompts through the `datasets` library (streamed: only `limit` rows are read)."""
    try:
        import datasets as hf_datasets
    except ImportError:
        raise UserError(f"no local copy of {name} (give --data-dir) and the `datasets` package is not "
                        "installed") from None
    if os.environ.get("HF_DATASETS_OFFLINE") == "1" or os.environ.get("HF_HUB_OFFLINE") == "1":
        raise UserError(f"no local copy of {name} (give --data-dir) and the dataset hub is offline")
    errors = []
    for source in spec.get("hub", []):
        try:
            rows = hf_datasets.load_dataset(source["path"], source.get("name"), split=source["split"],
                                            streaming=True)
            return [_query_from_hub_row(name, source, i, row)
                    for i, row in enumerate(itertools.islice(rows, limit))]
        except Exception as exc:  # network, missing dataset, changed schema: try the next source
            errors.append(f"{source['path']}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    raise UserError(f"no local copy of {name} (give --data-dir) and the hub failed: {'; '.join(errors)}")


def _query_from_hub_row(name: str, source: dict, index: int, row: dict) -> Query:
    qid = str(row[source["id"]]) if "id" in source else str(index)
    category = str(row[source["category"]]) if "category" in source else source.get("category_value", "")
    if "turns_field" in source:
        turns = row[source["turns_field"]]
        turns = [turns] if isinstance(turns, str) else list(turns)
    else:
        template = source["template"]
        if row.get("input") and "template_if_input" in source:
            template = source["template_if_input"]
        text = template.format(**row)
        if source.get("capitalize"):
            text = text[:1].upper() + text[1:]
        suffix = source.get("suffix_if_missing")
        if suffix and not text.endswith(suffix):
            text += suffix
        turns = [text]
    return Query(name, qid, category, tuple(turns))


def chat_prompt_ids(tokenizer, user_turns: list[str], answers: list[str]) -> list[int]:
    """Token ids of the chat [user 1, assistant 1, ..., user n] through the tokenizer's chat template,
    ending with the generation prompt: turn n's prompt carries the system's own earlier answers."""
    if len(answers) != len(user_turns) - 1:
        raise ValueError("need one answer per earlier turn")
    if not getattr(tokenizer, "chat_template", None):
        raise UserError("the target tokenizer has no chat template")
    messages = []
    for i, text in enumerate(user_turns):
        messages.append({"role": "user", "content": text})
        if i < len(answers):
            messages.append({"role": "assistant", "content": answers[i]})
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


@lru_cache(maxsize=4)
def retokenized_width(tokenizer) -> int:
    """The most tokens one generated token can take when a later turn's prompt carries it: an
    earlier answer goes in as its decoded text, tokenized again, and that is not the count it was
    generated in. A token that is part of a character decodes to U+FFFD, three bytes: random
    weights under the byte tokenizer wrote 256-token answers that took 448-471 tokens in turn 2.
    So the most any one token's text re-tokenizes to (at least 1)."""
    texts = tokenizer.batch_decode([[i] for i in range(len(tokenizer))], skip_special_tokens=True)
    return max([1, *(len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"])])
