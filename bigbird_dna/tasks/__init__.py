"""Tasks: each is a LightningModule (``EncoderTask``) built from ``conf/task/NAME.yaml``'s ``_target_``
and paired with its DataModule by ``EncoderTask.data_class`` (see ``bigbird_dna/train.py``)."""
