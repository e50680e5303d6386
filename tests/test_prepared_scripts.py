"""The GPU calls prepared for a later session (paper_figures/results/*/next-*.sh) and the run helpers
they call (paper_figures/*.sh) name only options that exist today. Some wait many sessions for the
machine they need (nvidia-h200-x2: NOTES, "For the next session"), and a flag renamed meanwhile would
cost that call: device time is what every session has least of."""
from __future__ import annotations

import re
from pathlib import Path

from typer.main import get_command

from swiftspec_bench.cli import app

FIGURES = Path(__file__).resolve().parents[1] / "paper_figures"
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
CLI = re.compile(r"(?:python3 -m swiftspec_bench\.cli|swiftspec-bench) (\w+)(.*)")
SCRIPT = re.compile(r"python3 (paper_figures/\w+\.py)(.*)")
HELPER_STEPS = re.compile(r"paper_figures/run_2xh200\.sh(.*)")  # its quoted steps: `run` options
ARRAY = re.compile(r"(\w+)=\((.*?)\)", re.S)  # a bash array of options, "${NAME[@]}" where it is used
END = re.compile(r"\s(?:\d?>|\|)|;|&&")  # where a command's own words end on its line


def prepared_scripts() -> list[Path]:
    return sorted(FIGURES.glob("*.sh")) + sorted(FIGURES.glob("results/*/next-*.sh"))


def applies_a_patch(text: str) -> bool:
    """The call patches its tree first: files it names may come with the patch."""
    return "patch -p1" in text or "git apply" in text


def cli_options() -> dict[str, set[str]]:
    """Each swiftspec-bench subcommand -> its long options."""
    return {name: {o for p in sub.params for o in (*p.opts, *p.secondary_opts) if o.startswith("--")}
            for name, sub in get_command(app).commands.items()}


def argparse_options(script: Path) -> set[str]:
    return set(re.findall(r"add_argument\(\s*\"(--[\w-]+)\"", script.read_text()))


def logical_lines(text: str) -> list[str]:
    """The script's lines with continuations joined, comment lines dropped."""
    lines = text.replace("\\\n", " ").splitlines()
    return [line for line in lines if not line.lstrip().startswith("#")]


def unknown_flags(text: str, options: dict[str, set[str]], root: Path = FIGURES.parent) -> list[str]:
    """Every option a script passes to swiftspec-bench, to a paper_figures/*.py script (or past its
    `-- SUBCOMMAND`) or as run_2xh200.sh's steps (and EXTRA) that the program does not take, as
    'program: --flag'. A script missing from the tree counts as taking nothing, unless the call applies
    a patch (which may add it)."""
    arrays = {name: FLAG.findall(body) for name, body in ARRAY.findall(text)}
    patched = applies_a_patch(text)
    found = []

    def to_cli(sub: str, flags: list[str]) -> None:  # flags given to `swiftspec-bench SUB`
        found.extend(f"swiftspec-bench {sub}: {f}" for f in flags if f not in options.get(sub, ()))
        if sub not in options:
            found.append(f"swiftspec-bench {sub}: no such command")

    for line in logical_lines(text):
        for cli in CLI.finditer(line):
            sub, rest = cli.group(1), END.split(cli.group(2))[0]
            passed_arrays = [f for name, fl in arrays.items() if f"${{{name}[@]}}" in rest for f in fl]
            to_cli(sub, FLAG.findall(rest) + passed_arrays)
        for script in SCRIPT.finditer(line):
            path, rest = root / script.group(1), END.split(script.group(2))[0]
            if not path.exists() and patched:
                continue  # a probe the call's patch adds
            rest, _, passed = rest.partition(" -- ")  # profile_decode.py OUT -- run [run options]
            takes = argparse_options(path) if path.exists() else set()
            found += [f"{script.group(1)}: {f}" for f in FLAG.findall(rest) if f not in takes]
            if passed:
                sub, _, args = passed.strip().partition(" ")
                to_cli(sub, FLAG.findall(args))
        steps, extra = HELPER_STEPS.search(line), re.search(r"EXTRA=\"([^\"]*)\"", line)
        run_words = (re.findall(r"\"([^\"]*)\"", steps.group(1)) if steps else []) + ([extra.group(1)] if extra else [])
        for words in run_words:
            to_cli("run", FLAG.findall(words))
    return found


def test_the_check_finds_a_renamed_flag():
    options = {"run": {"--systems", "--limit"}, "compare": {"--format"}}
    text = ("COMMON=(--systems ar\n  --old-flag 1)\n"
            "python3 -m swiftspec_bench.cli run \"${COMMON[@]}\" --limit 2 --gone > log 2>&1 # --not-a-flag\n"
            "# python3 -m swiftspec_bench.cli run --commented-out\n"
            "swiftspec-bench compare dir \\\n  --format markdown --width 3 | grep --count x\n"
            "EXTRA=\"--quant awq\" bash paper_figures/run_2xh200.sh out 500 \"10 --systems tree --tp 2\"\n"
            "PYTHONPATH=. python3 paper_figures/e2e_checks.py dir --ar ar:fused --no-such\n"
            "python3 paper_figures/profile_decode.py o.md -- run --limit 1 --gone2\n"
            "python3 paper_figures/no_such_probe.py --out x\n"
            "swiftspec-bench runs out\n")
    assert unknown_flags(text, options) == [
        "swiftspec-bench run: --gone", "swiftspec-bench run: --old-flag", "swiftspec-bench compare: --width",
        "swiftspec-bench run: --tp", "swiftspec-bench run: --quant", "paper_figures/e2e_checks.py: --no-such",
        "swiftspec-bench run: --gone2", "paper_figures/no_such_probe.py: --out",
        "swiftspec-bench runs: no such command"]
    assert unknown_flags(text + "patch -p1 < x.patch\n", options)[-2] == "swiftspec-bench run: --gone2"


def test_prepared_calls_and_run_helpers_name_existing_options():
    scripts = prepared_scripts()
    assert len(scripts) > 10, "the glob no longer finds the prepared calls"
    options = cli_options()
    assert {"run", "compare", "kernels"} <= set(options)
    found = {str(s.relative_to(FIGURES)): unknown_flags(s.read_text(), options) for s in scripts}
    assert {name: flags for name, flags in found.items() if flags} == {}


def test_prepared_calls_name_existing_model_presets():
    from swiftspec_core.models.presets import PRESETS

    named = re.compile(r"(?:(?:TARGET|DRAFT)=|--(?:target|draft) )([a-z][a-z0-9.-]+)(?![\w/])")
    texts = [s.read_text() for s in prepared_scripts()]
    names = {name for text in texts for line in logical_lines(text) for name in named.findall(line)}
    assert "llama-3-70b" in names, "the pattern no longer finds the pairs the calls name"
    assert sorted(names - set(PRESETS)) == []


def test_prepared_calls_name_existing_paths():
    """Every paper_figures/ path a call reads (replay recordings, probes, helpers, patches) is in the
    tree, but for files a patch the call applies adds."""
    missing = []
    for script in prepared_scripts():
        text = script.read_text()
        if applies_a_patch(text):
            continue
        paths = {p for line in logical_lines(text) for p in re.findall(r"paper_figures/[\w./-]*\w", line)}
        missing += [f"{script.relative_to(FIGURES)}: {p}" for p in sorted(paths) if not (FIGURES.parent / p).exists()]
    assert missing == []


def test_the_run_helpers_take_the_machines_rules_from_one_file():
    """paper_figures/device_env.sh exports comm/nccl.py's SAFE_ENV (NVLink multicast off), and every
    run helper sources it rather than writing those variables again."""
    from swiftspec_core.comm.nccl import SAFE_ENV

    exported = dict(re.findall(r"(\w+)=(\S+)", re.search(r"^export (.*)$", (FIGURES / "device_env.sh").read_text(),
                                                           re.M).group(1)))
    assert {k: v for k, v in exported.items() if k in SAFE_ENV} == SAFE_ENV
    writers = [s.name for s in FIGURES.glob("*.sh") if s.name != "device_env.sh" and "NCCL_NVLS_ENABLE" in s.read_text()]
    assert writers == []
    sourcing = [s.name for s in FIGURES.glob("*.sh") if "device_env.sh" in s.read_text()]
    assert {"awq_ab.sh", "gpu_test_files.sh", "run_2xh200.sh", "lossless_gpu.sh"} <= set(sourcing)
