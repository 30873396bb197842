"""General process utilities, below every other layer: atomic writes, timed phases, the malloc setting
of CPU inference, the device options of the inference CLIs, and which shard of a dataset a process reads."""
