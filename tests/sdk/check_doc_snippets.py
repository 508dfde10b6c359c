"""Every code block of a guide is a marked region of a file that the tests build or run
(CTest: sdk_doc_snippets), so that the guide cannot drift from code that works.

    check_doc_snippets.py GUIDE.md REPO_ROOT

A code block is preceded, on the line just above its opening fence, by

    <!-- snippet: path/from/repo/root#name -->

and must equal, after removing the common indentation, the lines between `[doc:name]` and the
next `[/doc]` marker lines in that file (comments in the file's language: `// [doc:name]`,
`# [doc:name]`). Blocks fenced as ```text (a program's output) are not code and need no source.
"""
import re
import sys
import textwrap
from pathlib import Path

guide, root = Path(sys.argv[1]), Path(sys.argv[2])
lines = guide.read_text().splitlines()
problems = []
checked = 0


def region(path, name):
    text = (root / path).read_text().splitlines()
    starts = [i for i, l in enumerate(text) if re.search(rf"\[doc:{re.escape(name)}\]\s*$", l)]
    if len(starts) != 1:
        return None, f"{path} has {len(starts)} [doc:{name}] markers (one expected)"
    body = []
    for l in text[starts[0] + 1:]:
        if re.search(r"\[/doc\]\s*$", l):
            return textwrap.dedent("\n".join(body)).strip("\n"), None
        body.append(l)
    return None, f"{path}: [doc:{name}] has no [/doc]"


i = 0
while i < len(lines):
    fence = re.match(r"^```(\w*)\s*$", lines[i])
    if not fence:
        i += 1
        continue
    end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), None)
    if end is None:
        problems.append(f"{guide}:{i + 1}: a code block is not closed")
        break
    block = "\n".join(lines[i + 1:end]).strip("\n")
    marker = re.match(r"^<!-- snippet: (\S+)#(\S+) -->$", lines[i - 1]) if i > 0 else None
    if fence.group(1) == "text":
        pass
    elif not marker:
        problems.append(f"{guide}:{i + 1}: a ```{fence.group(1)} block without a '<!-- snippet: file#name -->' line above it")
    else:
        want, error = region(marker.group(1), marker.group(2))
        checked += 1
        if error:
            problems.append(f"{guide}:{i + 1}: {error}")
        elif want != block:
            problems.append(f"{guide}:{i + 1}: the block differs from {marker.group(1)}#{marker.group(2)}:\n"
                            f"--- in the file:\n{want}\n--- in the guide:\n{block}")
    i = end + 1

for p in problems:
    print(p)
if problems:
    sys.exit(1)
print(f"{checked} code blocks of {guide} match their sources")
