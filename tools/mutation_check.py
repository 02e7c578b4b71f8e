#!/usr/bin/env python3
"""Mutation check: does the test suite notice a wrong model?

Applies each single-line mutant of tests/mutants.json to the working tree in turn, rebuilds the
test binary and the CLI, runs every test and reports whether one failed (killed) or none did
(survived). The tree is restored after every mutant, also when interrupted.

  tools/mutation_check.py [--build build] [--only SUBSTRING]

Each mutant is {"file", "find", "replace", "why"} plus optionally "equivalent": the reason a
mutant changes no result (then surviving is expected). `find` must occur exactly once in `file`.
A mutant must compile: one that does not is reported INVALID (it tests the compiler, not the
suite). Exit status: 0 when every non-equivalent mutant compiles and is killed, 1 otherwise, 2 on
bad input.
Not part of CI: every mutant recompiles a file and relinks the tests (about a minute each on a
2-core machine).
"""

import argparse
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = ["cmake", "--build"]
# The test binary, and the CLI its command-line tests run.
TARGETS = ["fabricsim_tests", "fabricsim"]


def fail(message):
    print(f"mutation_check: {message}", file=sys.stderr)
    sys.exit(2)


def load_mutants(path):
    try:
        mutants = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        fail(f"{path}: {e}")
    if not isinstance(mutants, list):
        fail(f"{path}: expected a JSON list of mutants")
    keys = {"file", "find", "replace", "why", "equivalent"}
    for i, m in enumerate(mutants):
        where = f"{path}: /{i}"
        if not isinstance(m, dict):
            fail(f"{where}: expected an object")
        unknown = set(m) - keys
        if unknown:
            fail(f"{where}: unknown key(s) {sorted(unknown)}")
        for k in ("file", "find", "replace", "why"):
            if not isinstance(m.get(k), str):
                fail(f"{where}/{k}: expected a string")
        source = (ROOT / m["file"]).read_text()
        count = source.count(m["find"])
        if count != 1:
            fail(f"{where}/find: occurs {count} times in {m['file']}, expected once")
    return mutants


def run(cmd, timeout):
    try:
        return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="build", help="CMake build directory")
    parser.add_argument("--mutants", default="tests/mutants.json")
    parser.add_argument("--only", default="",
                        help="run the mutants whose file or reason contains this")
    parser.add_argument("--tests", default="", help="Catch2 test spec (default: every test)")
    args = parser.parse_args()
    mutants = [m for m in load_mutants(ROOT / args.mutants) if args.only in m["file"] + m["why"]]
    binary = ROOT / args.build / "tests" / "fabricsim_tests"
    bad = 0
    for i, m in enumerate(mutants, 1):
        path = ROOT / m["file"]
        original = path.read_text()
        try:
            path.write_text(original.replace(m["find"], m["replace"]))
            build = run(BUILD + [args.build, "--target"] + TARGETS, 1800)
            if build is None or build.returncode != 0:
                verdict = "INVALID (does not compile)"
            else:
                tests = run([str(binary)] + ([args.tests] if args.tests else []), 900)
                if tests is None:
                    verdict = "killed (tests time out)"
                elif tests.returncode != 0:
                    verdict = "killed"
                else:
                    verdict = "survived"
        finally:
            path.write_text(original)
        if verdict == "survived":
            verdict = "equivalent" if m.get("equivalent") else "SURVIVED"
        bad += verdict in ("SURVIVED", "INVALID (does not compile)")
        print(f"{i:2d}/{len(mutants)} {verdict:26s} {m['file']}: {m['why']}", flush=True)
    # Leave the build matching the restored tree.
    run(BUILD + [args.build, "--target"] + TARGETS, 1800)
    print(f"{len(mutants)} mutants, {bad} that survived or do not compile")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
