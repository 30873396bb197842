"""The session's trained models (tests/api/conftest.py): an MLM on lambda and a planted-promoter classifier."""

from tests.api.conftest import mlm_export, promoter_export  # noqa: F401  (fixtures)
