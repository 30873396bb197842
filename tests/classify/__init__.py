"""Tests of task=classify: data layouts, training, predict and the Python API."""
