"""geri package."""
