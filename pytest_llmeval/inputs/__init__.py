"""Reading what users write: eval data files, ``*.llmeval.yaml`` manifests, safe YAML and the
JSON schemas.
"""
