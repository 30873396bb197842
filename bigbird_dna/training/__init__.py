"""The Lightning and Hydra machinery of ``python -m bigbird_dna.train``: the run record and resume
rules, checkpoints written atomically, callbacks (best and last checkpoint, early stopping,
progress lines, preemption and non-finite losses, RNG state, compiled layers), signals deferred to
step boundaries, Hydra resolvers and ``_target_`` building, and the DDP/SLURM glue. Nothing below
this package imports it; general process utilities live in :mod:`bigbird_dna.runtime`."""
