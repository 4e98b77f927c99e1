"""Print the spec files' schema section of docs/authoring.md, generated from x2/envspec/schema.py's models, or
with --write rewrite that section in place (tests/test_docs_authoring.py fails until the doc matches).

    python scripts/spec_schema_doc.py            # print it
    python scripts/spec_schema_doc.py --write    # refresh docs/authoring.md
"""

from __future__ import annotations

import sys
from pathlib import Path

from x2.envspec.schema_doc import BEGIN, END, schema_markdown

DOC = Path(__file__).resolve().parent.parent / "docs" / "authoring.md"


def main() -> None:
    text = schema_markdown()
    if sys.argv[1:] != ["--write"]:
        sys.stdout.write(text)
        return
    doc = DOC.read_text(encoding="utf-8")
    head, _, rest = doc.partition(BEGIN)
    _, _, tail = rest.partition(END + "\n")
    DOC.write_text(head + text + tail, encoding="utf-8")
    print(f"wrote {DOC}")


if __name__ == "__main__":
    main()
