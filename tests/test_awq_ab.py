"""paper_figures/awq_ab.sh, run on CPU with stand-ins for python3 and nvidia-smi: each patch lands on
its own side only, the sides alternate, and bad input ends in one `error:` line (exit 2) before
anything runs."""
import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARK, MARK2 = "// awq_ab test mark", "// awq_ab second mark"
# The stand-in python3: logs its working folder, whether that tree carries the patch, and its
# arguments; prints what the helper greps for (a fingerprint, a replay time, pytest's last line).
FAKE_PYTHON = f"""#!/usr/bin/env bash
patched=no; grep -q "{MARK}" cuda/awq_lanes.cuh 2>/dev/null && patched=yes
grep -q "{MARK2}" cuda/awq_lanes.cuh 2>/dev/null && patched=$patched-2
echo "$PWD $patched $*" >> "$CALLS"
case "$*" in
  *awq_output_hash.py*) echo '{{"o": "ab12"}}' ;;
  *profile_forward.py*) echo "x, replay 12345.6 us (CUDA events, median)" ;;
  *pytest*) echo "3 passed in 0.1s" ;;
esac
"""


def tree(tmp_path):
    """A copy of what the helper reads, with stand-ins first on PATH."""
    repo = tmp_path / "repo"
    for part in ("cuda", "swiftspec_core", "swiftspec_bench", "paper_figures", "tests"):
        shutil.copytree(ROOT / part, repo / part, ignore=shutil.ignore_patterns("__pycache__", "results"))
    shutil.copy(ROOT / "pyproject.toml", repo)
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for name, text in (("python3", FAKE_PYTHON), ("nvidia-smi", "#!/usr/bin/env bash\necho H200\n")):
        (bin_ / name).write_text(text)
        (bin_ / name).chmod(0o755)
    return repo, bin_


def run(repo, bin_, tmp_path, *args, commit="abc1234"):
    env = {"PATH": f"{bin_}:/usr/bin:/bin", "CALLS": str(tmp_path / "calls.log"), "HOME": str(tmp_path)}
    if commit:
        env["SWIFTSPEC_COMMIT"] = commit
    return subprocess.run(["bash", str(repo / "paper_figures/awq_ab.sh"), *args], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=120)


def mark_patch(repo, tmp_path, mark: str, name: str) -> Path:
    """NAME.patch: it adds `mark` as awq_lanes.cuh's second line."""
    lanes = (repo / "cuda/awq_lanes.cuh").read_text().splitlines(keepends=True)
    patched = tmp_path / name
    patched.mkdir()
    (patched / "awq_lanes.cuh").write_text("".join(lanes[:1] + [mark + "\n"] + lanes[1:]))
    diff = subprocess.run(["diff", "-u", "--label", "a/cuda/awq_lanes.cuh", "--label", "b/cuda/awq_lanes.cuh",
                           str(repo / "cuda/awq_lanes.cuh"), str(patched / "awq_lanes.cuh")],
                          capture_output=True, text=True).stdout
    (tmp_path / f"{patched.name}.patch").write_text(diff)
    return tmp_path / f"{patched.name}.patch"


def test_the_patch_on_new_only_and_the_sides_alternate(tmp_path):
    repo, bin_ = tree(tmp_path)
    done = run(repo, bin_, tmp_path, "out", str(mark_patch(repo, tmp_path, MARK, "mark")))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "fingerprints new: all 1 equal" in done.stdout and "awq tests new: exit 0 3 passed" in done.stdout
    calls = [line.split(" ", 2) for line in (tmp_path / "calls.log").read_text().splitlines()]
    sides = {"yes": "new", "no": "base"}
    profiles = [sides[patched_] for cwd, patched_, argv in calls if "profile_forward.py" in argv]
    assert profiles == ["new", "base"] * 3  # a, b, c: the stand-ins take no time
    assert all(Path(cwd) == repo for cwd, patched_, _ in calls if patched_ == "yes")
    assert all(sides[p] == "base" for cwd, p, _ in calls if Path(cwd) != repo)
    assert {sides[p] for _, p, argv in calls if "awq_output_hash.py" in argv} == {"new", "base"}
    assert [sides[p] for _, p, argv in calls if argv.startswith("-m pytest")] == ["new"]
    assert (repo / "out/env.log").read_text().startswith("commit abc1234 + mark.patch")
    assert not any(Path(cwd).exists() for cwd, _, _ in calls if Path(cwd) != repo)  # the base copy is gone


def test_a_second_patch_is_a_third_side_on_its_own_copy(tmp_path):
    repo, bin_ = tree(tmp_path)
    first, second = mark_patch(repo, tmp_path, MARK, "mark"), mark_patch(repo, tmp_path, MARK2, "second")
    done = run(repo, bin_, tmp_path, "out", str(first), str(second))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "fingerprints new2: all 1 equal" in done.stdout and "awq tests new2: exit 0 3 passed" in done.stdout
    calls = [line.split(" ", 2) for line in (tmp_path / "calls.log").read_text().splitlines()]
    sides = {"yes": "new", "no-2": "new2", "no": "base"}  # "yes-2" (both patches on one side) would fail here
    assert [sides[p] for _, p, argv in calls if "profile_forward.py" in argv] == ["new", "new2", "base"] * 3
    assert [sides[p] for _, p, argv in calls if argv.startswith("-m pytest")] == ["new", "new2"]
    assert all(Path(cwd) == repo for cwd, p, _ in calls if p == "yes")
    assert (repo / "out/env.log").read_text().startswith("commit abc1234 + mark.patch, new2: second.patch")
    assert not any(Path(cwd).exists() for cwd, _, _ in calls if Path(cwd) != repo)  # the copies are gone


def test_bad_input_is_one_error_line_before_anything_runs(tmp_path):
    repo, bin_ = tree(tmp_path)
    (tmp_path / "stale.patch").write_text("--- a/cuda/nothing.cuh\n+++ b/cuda/nothing.cuh\n@@ -1 +1 @@\n-x\n+y\n")
    for args, commit, says in ((("out",), "abc", "usage"), (("out", str(tmp_path / "none.patch")), "abc", "usage"),
                               (("out", str(tmp_path / "stale.patch")), None, "SWIFTSPEC_COMMIT"),
                               (("out", str(tmp_path / "stale.patch")), "abc", "does not apply"),
                               (("out", str(mark_patch(repo, tmp_path, MARK, "mark")), str(tmp_path / "stale.patch")), "abc",
                                "stale.patch does not apply")):
        done = run(repo, bin_, tmp_path, *args, commit=commit)
        lines = done.stdout.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: ") and says in lines[0], \
            (args, done.stdout, done.stderr)
    calls = (tmp_path / "calls.log").read_text().splitlines() if (tmp_path / "calls.log").exists() else []
    assert calls == []  # found before anything ran
    assert not os.path.exists(repo / "out/env.log")
