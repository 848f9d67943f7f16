"""wolf_service package."""
