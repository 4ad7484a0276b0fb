"""The offline commands behind ``python -m pytest_llmeval``: summarize, merge and the shard
commands. They read and write run dirs without a pytest session.
"""
