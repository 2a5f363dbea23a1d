"""``python -m lowering`` runs the command line."""

from .cli import run

run()
