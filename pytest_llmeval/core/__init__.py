"""The base layer every other folder uses: models, errors, fingerprints, redaction, clipping,
Markdown escaping, repeat statistics and small pure helpers. Imports nothing else of the package.
"""
