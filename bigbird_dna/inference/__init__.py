"""The inference layer, below every entry point that predicts (``predict``, ``embed``, ``score``,
``variants`` and :class:`~bigbird_dna.pretrained.BigBirdDNA`): devices and precision, windows,
batching, scoring both strands, CUDA-graph replay, the typed scan request, the predictors chosen by
a model's output kind, their writers, and masked-marginal likelihoods. It never imports the
training stack (``data``, ``tasks``, ``training``, Lightning, torchmetrics)."""
