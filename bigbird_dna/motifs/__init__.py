"""Motifs: planted-motif tasks with known answers, and what a model learned, as TF-MoDISco patterns
matched to JASPAR.

- :mod:`~bigbird_dna.motifs.jaspar`: JASPAR motifs, offline (``pyjaspar``);
- :mod:`~bigbird_dna.motifs.pwm`: one-hot encoding, sampling and log-odds scores of PFMs;
- :mod:`~bigbird_dna.motifs.planted` and :mod:`~bigbird_dna.motifs.task_folder`: planted-motif tasks;
- :mod:`~bigbird_dna.motifs.attributions`: the attribution file (HDF5) that ``explain`` writes;
- :mod:`~bigbird_dna.motifs.modisco`, :mod:`~bigbird_dna.motifs.tomtom`, :mod:`~bigbird_dna.motifs.report`
  and :mod:`~bigbird_dna.motifs.learn`: from attributions to a report of JASPAR-matched patterns.

The command line is ``python -m bigbird_dna.motifs {plant,learn,jaspar}``. The optional packages
(``pip install 'bigbird_dna[motifs]'``) are imported only where they are used.
"""
