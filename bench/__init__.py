"""Benchmarks and checks run from a checkout; not part of the installed package.

    python -m bench.same_results BEFORE/results.csv AFTER/results.csv
    python -m bench.synthetic_comparison RESULTS.csv [MORE.csv ...] [--majority P]
    python -m bench.generic_tables [--tables ...] [--oracles structured reference ...]
    python -m bench.generic_instances --csv /abs/TABLE.csv [--table NAME]
    python -m bench.schedule_variants --out variants.csv [--tables ...]
    python -m bench.synthetic_unlisted MECHANISM EPSILON SEED [--k 5]
    python -m bench.tree_size [--family TABLE:MECHANISM:EPSILON ...] [--seeds ...] [--survey]
    python -m bench.carry_on --family TABLE:MECHANISM:EPSILON [--seeds ...] [--stops 5]
    python -m bench.carry_table --state /abs/DIR [--tables ...] [--first 300] [--total 1800]
    python -m bench.carry_order --state /abs/DIR [--table NAME] [--first 60] [--total 600]
    python -m bench.go_on [--table NAME] [--epsilon 10] [--runs ...] [--at 0.85]
    python -m bench.node_rate [--family TABLE:MECHANISM:EPSILON ...] [--base COMMIT] \
        [--engine-base COMMIT] [--compare kernel engine]
    python -m bench.parts_balance [--parts 8 32 128] [--cpus 16 64 256] [--threads 2,4,8]
    python -m bench.adult_structured [--base COMMIT] [--epsilons ...] [--runs N] [--each]

Run from the repository's root (``python -m`` puts it on the path). ``same_results`` checks
that a refactoring left a sweep's results unchanged; ``synthetic_comparison`` tabulates
synthetic-data sweeps; ``generic_tables`` runs oracles side by side on real tables with many
continuous columns (``generic_instances`` builds them and writes one as a CSV for
``+sweep=table``); ``schedule_variants`` checks the synthetic-data game's schedule
(docs/synthetic.md 2.6) on public tables it was not chosen on; ``synthetic_unlisted`` measures
one synthetic table on every conjunction of up to k literals, a class no one lists; ``tree_size``
checks the window search's tree-size estimate (``oracles.window.tree_size``) against the nodes its
searches made; ``carry_on`` checks a search stopped and carried on against the search run
whole (``oracles.window.checkpoint``); ``carry_table`` carries hard solves on from a first limit to a total
one, beside the cost each first stop estimated; ``carry_order`` carries a table sweep on
cheapest first beside launch order (certified releases per CPU hour); ``go_on`` solves
problems whose window search stops just short of its certificate with the route going on from
the kept state and with the rest handed to the reference; ``node_rate`` measures the compiled search's
nodes per CPU second beside another commit's kernel, and the whole engine's beside another
commit's, on the same trees; ``parts_balance`` measures how donating workers (in process and on
threads) share a search's nodes beside a fixed split's, and replays them on P CPUs; ``adult_structured`` solves the Adult sweep's OPDisc and RSPM problems with the structured
oracle beside another commit's; ``machine`` is what each prints about where it ran. Measured results, with
the machine and the command that made them, are in docs/results/.
"""
