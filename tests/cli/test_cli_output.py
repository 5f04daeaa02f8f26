"""Where ``adcompiler compile`` and ``graph`` write: never over an input or a file of the user's
(without ``--force``), errors naming the user's path, and no temporary file left behind."""

import hashlib
import os
import shutil

import pytest

from adcompiler.cli import output as cli_output
from adcompiler.errors import CompileError

from tests.cli.test_cli import SAMPLES, adcompiler


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def listing(directory):
    """Every file under ``directory`` (hidden ones too), relative to it."""
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*")
                  if "__pycache__" not in p.parts)


@pytest.fixture
def side(tmp_path):
    (tmp_path / "sub").mkdir()
    shutil.copy(SAMPLES / "seed_f.py", tmp_path / "side.py")
    return tmp_path / "side.py"


@pytest.mark.parametrize("output", ["side.py", "sub/../side.py", "link.py", "hard.py"])
def test_compile_never_writes_over_its_input(side, output):
    tmp = side.parent
    os.symlink("side.py", tmp / "link.py")
    os.link(side, tmp / "hard.py")
    before, files = digest(side), listing(tmp)
    done = adcompiler("compile", "side.py", "-o", output, cwd=tmp)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"the output {output} is the input module side.py" in done.stderr
    assert "would replace your source" in done.stderr
    assert digest(side) == before and listing(tmp) == files


def test_compile_keeps_a_file_it_did_not_write_unless_forced(side):
    tmp = side.parent
    mine = tmp / "side_grad.py"
    mine.write_text("# my own, hand-written gradient\n")
    before = digest(mine)
    done = adcompiler("compile", "side.py", cwd=tmp)
    assert done.returncode == 2
    assert "side_grad.py exists and was not written by adcompiler compile" in done.stderr
    assert "--force" in done.stderr
    assert digest(mine) == before and listing(tmp) == ["side.py", "side_grad.py", "sub"]
    assert adcompiler("compile", "side.py", "--force", cwd=tmp).returncode == 0
    assert cli_output.written_by_adcompiler(str(mine))
    again = adcompiler("compile", "side.py", cwd=tmp)       # its own output: replaced unasked
    assert again.returncode == 0, again.stderr


def test_a_directory_compiles_its_modules_not_the_files_compile_wrote(tmp_path):
    shutil.copy(SAMPLES / "seed_f.py", tmp_path / "a.py")
    shutil.copy(SAMPLES / "seed_f.py", tmp_path / "b.py")
    (tmp_path / "a_grad.py").write_text("def mine():\n    return 1\n")   # the user's own
    before = digest(tmp_path / "a_grad.py")
    for _ in range(2):   # the second time, b_grad.py (written by compile) is no module to compile
        done = adcompiler("compile", tmp_path)
        assert done.returncode == 2
        assert f"{tmp_path / 'a_grad.py'}, where compile writes the gradients of " \
               f"{tmp_path / 'a.py'}, is a module to compile" in done.stderr
        assert "compiled 1 of 3 modules (1 failed, 1 without marked functions)" in done.stderr
        assert digest(tmp_path / "a_grad.py") == before
        assert cli_output.written_by_adcompiler(str(tmp_path / "b_grad.py"))


@pytest.mark.parametrize("args, message", [
    (("compile", "side.py", "-o", "nowhere/out.py"),
     "cannot write nowhere/out.py: directory nowhere does not exist"),
    (("compile", "side.py", "-o", "sub"), "sub is a directory: give a file name"),
    (("compile", "side.py", "-o", "side.py/out.py"),
     "cannot write side.py/out.py: directory side.py is not a directory"),
    (("graph", "side.py:f", "-o", "nowhere/g.dot"),
     "cannot write nowhere/g.dot: directory nowhere does not exist"),
    (("graph", "side.py:f", "-o", "sub"), "sub is a directory: give a file name"),
])
def test_output_path_errors_name_the_path_and_leave_nothing_behind(side, args, message):
    tmp = side.parent
    files = listing(tmp)
    done = adcompiler(*args, cwd=tmp)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert message in done.stderr
    assert ".tmp" not in done.stderr
    assert listing(tmp) == files


def test_a_failed_write_removes_its_temporary_file(tmp_path):
    (tmp_path / "taken").mkdir()
    with pytest.raises(CompileError, match="cannot write .*taken: Is a directory"):
        cli_output.write_file(str(tmp_path / "taken"), b"x = 1\n")
    assert listing(tmp_path) == ["taken"]
    cli_output.write_file(str(tmp_path / "new.py"), b"x = 1\n")
    assert listing(tmp_path) == ["new.py", "taken"]
    assert (tmp_path / "new.py").read_bytes() == b"x = 1\n"
