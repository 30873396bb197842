"""``python -m bigbird_dna.predict``: see :mod:`bigbird_dna.predict.cli`."""

from bigbird_dna.predict.cli import main

if __name__ == "__main__":  # not again in a spawned tokenizer worker
    main()
