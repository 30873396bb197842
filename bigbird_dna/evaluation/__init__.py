"""How a model is judged: the metrics it shares with its baselines, and the baselines themselves
(k-mer chains for masked language models; k-mer logistic regression and a small CNN for
classifiers), scored on the same held-out bases or sequences."""
