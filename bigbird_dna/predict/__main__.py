"""``python -m bigbird_dna.predict``: see :mod:`bigbird_dna.predict.cli`."""

from bigbird_dna.predict.cli import main

main()
