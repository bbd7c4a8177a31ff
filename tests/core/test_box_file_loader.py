"""Box files load through snet's loader, whose code is what a ``.pyc`` would hold (snet.core.boxes.BoxFileLoader).

On free-threaded CPython 3.13 that is what lets the calls of one box from
several workers scale (docs/cores.md); its speed is measured in bench/, not
here.  Here: the module is the file's, its tracebacks name the file's lines.
"""

from __future__ import annotations

import traceback

import pytest

from snet.core.boxes import BoxFileLoader, load_module_from_path

SOURCE = "LIMIT = 1_000_003\n\n\ndef work(x):\n    if x < 0:\n        raise ValueError('negative')\n    return (x * 31) % LIMIT\n"


def test_a_box_file_is_loaded_by_the_box_loader_with_its_file_and_lines(tmp_path):
    path = tmp_path / "boxfile_loaded.py"
    path.write_text(SOURCE)
    module = load_module_from_path(str(path))
    assert isinstance(module.__spec__.loader, BoxFileLoader)
    assert module.work(2) == 62
    assert module.work.__code__.co_filename == str(path)
    with pytest.raises(ValueError) as raised:
        module.work(-1)
    frame = traceback.extract_tb(raised.value.__traceback__)[-1]
    assert (frame.filename, frame.lineno, frame.line) == (str(path), 6, "raise ValueError('negative')")
