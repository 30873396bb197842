"""Masked-language-model data from a genome: the DataModule (random train windows, tiled val/test
windows), the collator that tokenizes and masks them, and the masking rule."""
