"""Whole-system tests share the keyed servers of the service-layer tests (tests/wolf_service/conftest.py)."""

from tests.wolf_service.conftest import certs, shared_engine, start_freki  # noqa: F401 - fixtures
