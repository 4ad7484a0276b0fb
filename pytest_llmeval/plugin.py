"""pytest hooks of pytest-llmeval (being wired)."""
