"""The pytest side: every hook, and everything that touches items, config, reports or xdist.

Options, collection nodes, per-process state, results as they arrive, the xdist scheduler,
progress, budgets and the session report. The only folder that imports pytest or xdist.
"""
