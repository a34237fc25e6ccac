"""docs/DJANGO.md and docs/FLASK.md show the sample apps' files: each block that says `# file: PATH` is that file,
verbatim (or, marked "(excerpt)", a part of it), so the docs show what tests/integration/test_*_app.py runs."""

from __future__ import annotations

import os
import re

import pytest

from tests.conftest import ROOT

DOCS = ["docs/DJANGO.md", "docs/FLASK.md"]
BLOCK = re.compile(r"^```python\n# file: (\S+)( \(excerpt\))?\n(.*?)^```$", re.M | re.S)


def blocks(doc: str) -> list[tuple[str, bool, str]]:
    with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
        return [(m.group(1), bool(m.group(2)), m.group(3)) for m in BLOCK.finditer(f.read())]


@pytest.mark.parametrize("doc", DOCS)
def test_each_file_block_is_the_sample_apps_file(doc):
    found = blocks(doc)
    assert len(found) >= 3, f"{doc} shows the sample app's files"
    for path, excerpt, text in found:
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            actual = f.read()
        if excerpt:
            assert text in actual, f"{doc}: the excerpt of {path} is no longer in the file"
        else:
            assert text == actual, f"{doc}: {path} differs from the file: copy the file into the docs again"
