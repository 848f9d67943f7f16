"""freki package."""
