"""One module per runtime probed by targets/probe.py: ``VERSION`` and ``run(model_bytes, feeds)``."""
