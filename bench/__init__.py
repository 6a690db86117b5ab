"""Benchmarks and checks run from a checkout; not part of the installed package.

    python -m bench.same_results BEFORE/results.csv AFTER/results.csv
    python -m bench.synthetic_comparison RESULTS.csv [MORE.csv ...] [--majority P]
    python -m bench.generic_tables [--tables ...] [--oracles structured reference ...]
    python -m bench.generic_instances --csv /abs/TABLE.csv [--table NAME]

Run from the repository's root (``python -m`` puts it on the path). ``same_results`` checks
that a refactoring left a sweep's results unchanged; ``synthetic_comparison`` tabulates
synthetic-data sweeps; ``generic_tables`` runs oracles side by side on real tables with many
continuous columns (``generic_instances`` builds them and writes one as a CSV for
``+sweep=table``); ``machine`` is what each prints about where it ran. Measured results, with
the machine and the command that made them, are in docs/results/.
"""
