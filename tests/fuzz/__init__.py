"""Differential fuzzer: random programs run eagerly and through ignis.compile.

generator.py makes a program (source text) from a seed, runner.py runs it
eagerly and compiled and compares every call (in a child process, so crashes
and hangs are failures), minimize.py shrinks a failing program by deleting
statements, and __main__.py is the command line (`python3 -m tests.fuzz`).
docs/fuzzing.md describes it.
"""
