"""The tools a model is offered (the registry) and the broker that answers a model's calls from
fixtures.
"""
