"""``snet fmt``: in place and atomic, ``--check``, ``--diff``, refusal of what does not parse.

The last test is the repository's own check: ``snet fmt --check`` over
every ``.snet`` file of the repository exits with 0, except the files that
must keep their exact text, listed in :data:`NOT_FORMATTED` with the reason.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 120

UGLY = "net n {\n    box f ((a) -> (b));   // makes b\n} connect f;\n"
PRETTY = "net n\n{\n  box f ((a) -> (b));  // makes b\n}\nconnect f;\n"
BROKEN = "net m connect f ..;\n"

# Repository .snet files snet fmt leaves as they are, and why.
NOT_FORMATTED = {
    "tests/conformance/cases/": "a copy of the shared acceptance suite, which must equal the shared folder "
                                "(tests/conformance/MANIFEST)",
    "tests/compiler/golden/": "inputs of the golden error and warning messages: their .err files pin the "
                              "positions, and most of them do not parse on purpose",
    "docs/tutorial/broken.snet": "the tutorial's example of a syntax error",
    "tests/compiler/dialect/parens.snet": "the rts dialect's parenthesised exit patterns and split tags, "
                                          "which fmt writes in the standard form (parens_plain.snet)",
}
RTS = ("tests/compiler/dialect/",)  # read in the rts dialect


def snet(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", "snet", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=TIMEOUT)


def test_files_are_rewritten_in_place_keeping_their_mode(tmp_path):
    path = tmp_path / "n.snet"
    path.write_text(UGLY)
    path.chmod(0o640)
    before = path.stat().st_ino
    result = snet("fmt", str(path))
    assert (result.returncode, result.stdout) == (0, "")
    assert result.stderr == "1 file reformatted, 0 files left unchanged\n"
    assert path.read_text() == PRETTY
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert path.stat().st_ino != before  # a new file renamed over the old one
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n.snet"]  # no temporary file left
    again = snet("fmt", str(path))
    assert again.returncode == 0 and again.stderr == "0 files reformatted, 1 file left unchanged\n"
    assert path.read_text() == PRETTY


def test_a_link_is_followed_and_stays_a_link(tmp_path):
    target = tmp_path / "real.snet"
    target.write_text(UGLY)
    link = tmp_path / "link.snet"
    link.symlink_to(target)
    assert snet("fmt", str(link)).returncode == 0
    assert link.is_symlink() and target.read_text() == PRETTY


def test_check_exits_with_1_and_shows_the_diff_writing_nothing(tmp_path):
    path = tmp_path / "n.snet"
    path.write_text(UGLY)
    result = snet("fmt", "--check", str(path))
    assert result.returncode == 1
    assert result.stdout.startswith(f"--- {path}\n+++ {path} (formatted)\n")
    assert "-    box f ((a) -> (b));   // makes b\n" in result.stdout
    assert "+  box f ((a) -> (b));  // makes b\n" in result.stdout
    assert result.stderr == f"would reformat {path}\n1 file would be reformatted, 0 files left unchanged\n"
    assert path.read_text() == UGLY
    path.write_text(PRETTY)
    result = snet("fmt", "--check", str(path))
    assert (result.returncode, result.stdout) == (0, "")


def test_diff_prints_the_diff_and_writes_nothing(tmp_path):
    path = tmp_path / "n.snet"
    path.write_text(UGLY)
    result = snet("fmt", "--diff", str(path))
    assert result.returncode == 0
    assert "+connect f;\n" in result.stdout
    assert path.read_text() == UGLY


def test_check_and_diff_exclude_each_other(tmp_path):
    path = tmp_path / "n.snet"
    path.write_text(UGLY)
    result = snet("fmt", "--check", "--diff", str(path))
    assert result.returncode == 2 and "not allowed with argument" in result.stderr


def test_a_file_that_does_not_parse_stops_every_file_from_being_written(tmp_path):
    good, bad = tmp_path / "good.snet", tmp_path / "bad.snet"
    good.write_text(UGLY)
    bad.write_text(BROKEN)
    result = snet("fmt", str(good), str(bad))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"{bad}:1:19: error: unexpected ';' (expected name, '(', '[', '[|')",
        "  net m connect f ..;",
        "                    ^",
        "error: nothing written: 1 of 2 files does not parse"]
    assert good.read_text() == UGLY and bad.read_text() == BROKEN
    assert snet("fmt", "--check", str(good), str(bad)).returncode == 2


def test_invalid_utf8_is_a_positioned_error_and_no_file_is_written(tmp_path):
    good, bad = tmp_path / "good.snet", tmp_path / "bad.snet"
    good.write_text(UGLY)
    bad.write_bytes(b"net a connect b;\n// caf\xe9\n")
    result = snet("fmt", str(good), str(bad))
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == (
        f"{bad}:2:7: error: invalid UTF-8 (byte 0xe9: invalid continuation byte); a .snet file must be UTF-8 text")
    assert good.read_text() == UGLY and bad.read_bytes() == b"net a connect b;\n// caf\xe9\n"


def test_a_missing_file_is_a_usage_error(tmp_path):
    result = snet("fmt", str(tmp_path / "nosuch.snet"))
    assert result.returncode == 2
    assert result.stderr == f"error: network file not found: {tmp_path / 'nosuch.snet'}\n"


def test_a_folder_stands_for_its_snet_files_and_the_rts_dialect_is_read(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.snet").write_text(UGLY)
    (tmp_path / "notes.txt").write_text(UGLY)
    inline = "box f ((a) -> (b)) {<<< python | return {\"b\": a} >>>}\nnet  g connect f;\n"
    (tmp_path / "b.snet").write_text(inline)
    assert snet("fmt", str(tmp_path)).returncode == 2  # inline code is rts only: nothing written
    assert (tmp_path / "sub" / "a.snet").read_text() == UGLY
    result = snet("fmt", "--dialect", "rts", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "sub" / "a.snet").read_text() == PRETTY
    assert (tmp_path / "b.snet").read_text() == inline.replace("net  g", "net g")
    assert (tmp_path / "notes.txt").read_text() == UGLY


def repository_files() -> list[str]:
    try:
        return subprocess.run(["git", "ls-files", "*.snet"], cwd=ROOT, capture_output=True, text=True, check=True,
                              timeout=TIMEOUT).stdout.split()
    except (OSError, subprocess.SubprocessError):  # not a git checkout: every .snet file under the root
        return sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*.snet")
                      if not {"build", ".git"} & set(p.relative_to(ROOT).parts))


def test_every_repository_snet_file_is_formatted():
    files = [f for f in repository_files() if not any(f.startswith(skip) for skip in NOT_FORMATTED)]
    rts = [f for f in files if f.startswith(RTS)]
    standard = [f for f in files if f not in rts]
    assert len(standard) >= 10 and len(rts) >= 5, (standard, rts)
    for dialect, group in (("standard", standard), ("rts", rts)):
        result = snet("fmt", "--check", "--dialect", dialect, *group, cwd=ROOT)
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.stderr == f"0 files would be reformatted, {len(group)} files left unchanged\n"


def test_standard_input_is_formatted_to_standard_output(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))

    def fmt(*args: str, text: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "snet", "fmt", *args, "-"], input=text, capture_output=True,
                              text=True, env=env, timeout=TIMEOUT)

    assert (fmt(text=UGLY).returncode, fmt(text=UGLY).stdout) == (0, PRETTY)
    check = fmt("--check", text="net n connect a..b;")  # no newline at the end
    assert check.returncode == 1
    assert check.stdout.splitlines()[3:] == ["-net n connect a..b;", "\\ No newline at end of file",
                                            "+net n connect a .. b;"]
    assert fmt("--check", text=PRETTY).returncode == 0
    broken = fmt(text=BROKEN)
    assert (broken.returncode, broken.stdout) == (2, "")
    assert broken.stderr.startswith("<stdin>:1:19: error: unexpected ';'")
    mixed = snet("fmt", "-", str(tmp_path / "x.snet"))
    assert mixed.returncode == 2 and "'-' (standard input) cannot be given with files" in mixed.stderr
