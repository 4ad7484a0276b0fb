"""A run's configuration: the frozen Settings, OpenAI-compatible providers and token prices."""
