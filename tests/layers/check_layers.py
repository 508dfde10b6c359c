#!/usr/bin/env python3
"""The layering check (docs/architecture.md, "One direction of flow").

Reads every `#include "..."` of the source folders below and fails, naming file and line, where
a file includes a header of a layer above its own or of another folder on its own level; and
where a file outside app/gui includes GL, GLFW, glad or Dear ImGui (the model has no GL).

    check_layers.py [ROOT]      check the tree at ROOT (default: this repository)
    check_layers.py --self-test check that the check finds what it must, on trees it writes

Exit status 0 when the tree keeps to its layers, 1 with one line per violation.
"""
import os
import re
import sys
import tempfile

# Each source folder and its level: a file may include headers of its own folder and of folders
# on lower levels only. The longest matching folder decides (app/model/viewer before app/model).
LAYERS = [
    ("base", 0),                      # dtypes, tensors, configs, the mask rule
    ("instrumentation/probe", 0),     # the installed probe API (device side), standalone
    ("instrumentation/trace", 1),     # the event model on the host, trace and tensor files
    ("instrumentation/simt", 1),      # the CPU SIMT runtime
    ("kernels", 2),                   # kernels, tiling, launchers, the float64 reference
    ("instrumentation/recorder", 2),  # the installed recorder (over base and trace)
    ("app/model", 3),                 # the model library's own files: run views, colormaps, PNG
    ("app/model/analysis", 4),
    ("app/model/capture", 4),
    ("app/model/export", 5),          # exports of an analysis
    ("app/model/viewer", 5),          # the viewer's model: analysis, capture
    ("app/cli_common", 6),            # what both programs share: exit codes, messages, integer options
    ("app/cli", 7),
    ("app/gui", 7),
]
SOURCE_SUFFIXES = (".h", ".hpp", ".cpp", ".cu", ".cuh", ".inc", ".in")
# Headers of the probe and recorder APIs are included as "tilescope/...", as users include them.
INCLUDE_ROOTS = ["", "instrumentation/probe", "instrumentation/recorder"]
# GL and the GUI toolkit: app/gui's alone.
GL_INCLUDE = re.compile(r"^(GL/|GLFW/|glad/|imgui|backends/imgui|KHR/)", re.IGNORECASE)
GL_FOLDER = "app/gui"
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def layer_of(path):
    """The (folder, level) a repository-relative path belongs to, or None."""
    best = None
    for folder, level in LAYERS:
        if path == folder or path.startswith(folder + "/"):
            if best is None or len(folder) > len(best[0]):
                best = (folder, level)
    return best


def resolve(root, including, name):
    """The repository-relative path an #include "name" reads, or None when it is not ours (a
    generated or external header)."""
    candidates = [os.path.join(os.path.dirname(including), name)]
    candidates += [os.path.join(prefix, name) for prefix in INCLUDE_ROOTS]
    for candidate in candidates:
        candidate = os.path.normpath(candidate)
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None


def check(root):
    problems = []
    for folder, _ in LAYERS:
        top = os.path.join(root, folder)
        if not os.path.isdir(top):
            continue
        for dirpath, _, files in os.walk(top):
            for file_name in sorted(files):
                if not file_name.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.relpath(os.path.join(dirpath, file_name), root)
                own = layer_of(path)
                if own[0] != folder:
                    continue  # walked again under its own, deeper folder
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        bracket, name = m.groups()
                        if GL_INCLUDE.match(name) and own[0] != GL_FOLDER and not own[0].startswith(GL_FOLDER + "/"):
                            closing = ">" if bracket == "<" else '"'
                            problems.append(f"{path}:{number}: includes {bracket}{name}{closing}: GL and the GUI toolkit "
                                            f"belong to {GL_FOLDER} alone ({own[0]} is below it)")
                            continue
                        if bracket != '"':
                            continue
                        target = resolve(root, path, name)
                        if target is None:
                            continue
                        theirs = layer_of(target)
                        if theirs is None or theirs[0] == own[0] or theirs[1] < own[1]:
                            continue
                        where = "above it" if theirs[1] > own[1] else "beside it (the same level)"
                        problems.append(f'{path}:{number}: includes "{name}": {theirs[0]} (level {theirs[1]}) '
                                        f"is {where}; {own[0]} is level {own[1]}")
    return problems


def self_test():
    """The check run on small trees: a clean one passes; each kind of violation is named with its
    file and line."""
    cases = {
        # file -> its text; expected: the start of each problem line
        "clean": ({"base/a.h": "#pragma once\n",
                   "kernels/k.h": '#include "base/a.h"\n#include <vector>\n',
                   "app/model/m.h": '#include "kernels/k.h"\n',
                   "app/model/viewer/v.h": '#include "app/model/m.h"\n#include "tilescope/p.h"\n',
                   "instrumentation/probe/tilescope/p.h": "#pragma once\n",
                   "app/gui/g.cpp": '#include <GLFW/glfw3.h>\n#include "imgui.h"\n#include "app/model/viewer/v.h"\n'},
                  []),
        "upward": ({"base/a.h": '#pragma once\n\n#include "app/model/m.h"\n',
                    "app/model/m.h": "#pragma once\n"},
                   ['base/a.h:3: includes "app/model/m.h": app/model (level 3) is above it']),
        "sibling": ({"app/gui/g.cpp": '#include "app/cli/c.h"\n', "app/cli/c.h": "\n"},
                    ['app/gui/g.cpp:1: includes "app/cli/c.h": app/cli (level 7) is beside it']),
        "model root over its subfolder": ({"app/model/m.cpp": '#include "app/model/viewer/v.h"\n',
                                           "app/model/viewer/v.h": "\n"},
                                          ['app/model/m.cpp:1: includes "app/model/viewer/v.h"']),
        "probe API by its installed name": ({"instrumentation/probe/tilescope/p.h": '#include "tilescope/r.h"\n',
                                             "instrumentation/recorder/tilescope/r.h": "\n"},
                                            ['instrumentation/probe/tilescope/p.h:1: includes "tilescope/r.h"']),
        "GL in the model": ({"app/model/viewer/v.cpp": "\n#include <GL/gl.h>\n"},
                            ["app/model/viewer/v.cpp:2: includes <GL/gl.h>: GL and the GUI toolkit"]),
        "ImGui in the kernels": ({"kernels/k.cpp": '#include "imgui.h"\n'},
                                 ['kernels/k.cpp:1: includes "imgui.h": GL and the GUI toolkit']),
    }
    failed = 0
    for name, (files, expected) in cases.items():
        with tempfile.TemporaryDirectory() as root:
            for path, text in files.items():
                os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
                with open(os.path.join(root, path), "w", encoding="utf-8") as f:
                    f.write(text)
            problems = check(root)
        ok = len(problems) == len(expected) and all(p.startswith(e) for p, e in zip(problems, expected))
        if not ok:
            failed += 1
            print(f"self-test '{name}': expected {expected}, got {problems}")
    print(f"self-test: {len(cases) - failed} of {len(cases)} cases as expected")
    return 1 if failed else 0


def main(argv):
    if len(argv) > 1 and argv[1] == "--self-test":
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    problems = check(os.path.abspath(root))
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} include(s) against the layers (tests/layers/check_layers.py, docs/architecture.md)")
        return 1
    print("every include keeps to the layers")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
